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

/// Checkpoints run on their own thread (issue 22): a commit reaches the database file itself
/// soon after, though the writer only checkpoints past thousands of log pages; and the
/// writer keeps its savepoints' journal in memory instead of a temporary file per batch.
#[tokio::test]
async fn commits_reach_the_database_file_without_the_writer_checkpointing() {
    let app = spawn_app().await;
    let (temp_store, autocheckpoint) = app
        .state
        .db
        .write(|tx| {
            Ok((
                tx.query_row("PRAGMA temp_store", [], |r| r.get::<_, i64>(0))?,
                tx.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get::<_, i64>(0))?,
            ))
        })
        .await
        .unwrap();
    assert_eq!((temp_store, autocheckpoint), (2, 4096)); // 2 = MEMORY
    // A new table changes the schema cookie, on page 1 (bytes 40..44 of the file); a commit
    // writes the page to the log, and only a checkpoint copies it into the file.
    let cookie = app
        .state
        .db
        .write(|tx| {
            tx.execute_batch("CREATE TABLE checkpointed (x INTEGER)")?;
            Ok(tx.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0))?)
        })
        .await
        .unwrap();
    let file = app.data_dir.path().join("merchant-admin.db");
    let in_file = || {
        let bytes = std::fs::read(&file).unwrap();
        i64::from(u32::from_be_bytes(bytes[40..44].try_into().unwrap()))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while in_file() != cookie {
        assert!(
            std::time::Instant::now() < deadline,
            "the commit never reached the database file: no checkpoint ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
