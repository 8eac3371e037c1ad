//! Storage settings (issue 2 §2): WAL, synchronous=NORMAL, foreign keys, a busy timeout on
//! every connection; readers cannot write.

use crate::support::spawn_app;

type Pragmas = (String, i64, i64, i64);

fn pragmas(c: &rusqlite::Connection) -> rusqlite::Result<Pragmas> {
    let get = |p: &str| c.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, i64>(0));
    Ok((
        c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?,
        get("synchronous")?,
        get("foreign_keys")?,
        get("busy_timeout")?,
    ))
}

#[tokio::test]
async fn every_connection_has_the_pragmas_and_readers_are_read_only() {
    let app = spawn_app().await;
    let expected: Pragmas = ("wal".into(), 1, 1, 5000); // synchronous 1 = NORMAL
    let reader = app.state.db.read(|c| Ok(pragmas(c)?)).await.unwrap();
    assert_eq!(reader, expected);
    let writer = app.state.db.write(|tx| Ok(pragmas(tx)?)).await.unwrap();
    assert_eq!(writer, expected);

    let write_on_reader = app
        .state
        .db
        .read(|c| Ok(c.execute("DELETE FROM users", [])?))
        .await;
    assert!(
        write_on_reader.is_err(),
        "reader connections are query_only"
    );
    assert!(app.data_dir.path().join("merchant-admin.db").exists());
}
