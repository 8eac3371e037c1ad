//! The server's HMAC keys: `hmac` (code hashes, idempotency fingerprints) and `cursor`
//! (cursor signatures). They live in `<data-dir>/hmac.key` beside `secrets.key`, not in the
//! database, so a copy of the database or of a backup alone cannot test guesses of a
//! six-digit code offline or forge a cursor.
//!
//! Releases before issue 13 kept them in the `server_keys` table, and the migrations of a new
//! database still put fresh ones there: every start moves what it finds there into the file
//! (written and synced first, the rows deleted after), so a crash in between leaves both
//! copies and the next start finishes the move. The rows win over an existing file: they
//! are what that database's hashes were made with (a database restored from an old backup).

use std::path::Path;

use anyhow::{Context, bail};
use rusqlite::Connection;

pub const HMAC_KEY_FILE: &str = "hmac.key";
const KEY_LEN: usize = 32;

pub struct ServerKeys {
    pub cursor: Vec<u8>,
    pub hmac: Vec<u8>,
}

/// Moves keys left in the database to the key file, then reads them from the file.
pub fn load(data_dir: &Path, c: &mut Connection) -> anyhow::Result<ServerKeys> {
    let path = data_dir.join(HMAC_KEY_FILE);
    let in_db = |name: &str| -> rusqlite::Result<Option<Vec<u8>>> {
        let mut s = c.prepare("SELECT key FROM server_keys WHERE name = ?1")?;
        let mut rows = s.query_map([name], |r| r.get(0))?;
        rows.next().transpose()
    };
    let (cursor, hmac) = (in_db("cursor")?, in_db("hmac")?);
    let keys = match (cursor, hmac) {
        (Some(cursor), Some(hmac)) => {
            let keys = ServerKeys { cursor, hmac };
            move_out_of_db(&path, c, &keys)?;
            keys
        }
        (None, None) => read_file(&path)?,
        _ => bail!("the server_keys table holds only one of the cursor and hmac keys"),
    };
    if keys.cursor.len() != KEY_LEN || keys.hmac.len() != KEY_LEN {
        bail!("{} must hold two {KEY_LEN}-byte keys", path.display());
    }
    Ok(keys)
}

fn move_out_of_db(path: &Path, c: &mut Connection, keys: &ServerKeys) -> anyhow::Result<()> {
    let bytes = [keys.cursor.as_slice(), &keys.hmac].concat();
    match std::fs::read(path) {
        Ok(existing) if existing == bytes => {} // a move interrupted after the file was written
        Ok(_) => {
            // Another database's keys (this one was replaced): kept, in case it comes back.
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
            let aside = path.with_extension(format!("key.replaced-{stamp}"));
            std::fs::rename(path, &aside)
                .with_context(|| format!("keeping {}", aside.display()))?;
            write_file(path, &bytes)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_file(path, &bytes)?,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    // Zero the deleted rows' bytes in their page, then rewrite the file (older copies may sit
    // in free space) and truncate the WAL, which still holds the page as it was.
    c.pragma_update(None, "secure_delete", true)?;
    c.execute(
        "DELETE FROM server_keys WHERE name IN ('cursor', 'hmac')",
        [],
    )?;
    super::scrub(c)
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::secrets::write_private(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

fn read_file(path: &Path) -> anyhow::Result<ServerKeys> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{} is missing: this database's codes and cursors were made with the key it held. \
             Copy it back, with secrets.key, from where you keep your backups",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if bytes.len() != 2 * KEY_LEN {
        bail!("{} must hold two {KEY_LEN}-byte keys", path.display());
    }
    let (cursor, hmac) = bytes.split_at(KEY_LEN);
    Ok(ServerKeys {
        cursor: cursor.to_vec(),
        hmac: hmac.to_vec(),
    })
}
