//! `merchant-admin backup` and `restore`: a checked copy of the database, and putting one
//! back.

use crate::cli::{BackupArgs, RestoreArgs};
use crate::db::{backup as db_backup, keys};
use crate::secrets;

/// Writes a checked copy, then reminds the operator of the key files it leaves out.
pub fn backup(args: &BackupArgs) -> anyhow::Result<()> {
    let r = db_backup::backup(&args.data.data_dir, &args.path)?;
    println!(
        "backup written to {} ({} bytes) in {} ms; integrity check ok",
        r.path.display(),
        r.bytes,
        r.duration.as_millis()
    );
    let dir = &args.data.data_dir;
    let keys: Vec<String> = [secrets::SEAL_KEY_FILE, keys::HMAC_KEY_FILE]
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !keys.is_empty() {
        eprintln!(
            "note: webhook and TOTP secrets are sealed, and codes hashed, with keys kept \
             outside the database ({}); they are not in the backup: keep a copy of \
             them with your backups",
            keys.join(", ")
        );
    }
    Ok(())
}

/// Replaces the database with a backup, keeping the replaced one aside.
pub fn restore(args: &RestoreArgs) -> anyhow::Result<()> {
    let kept = db_backup::restore(&args.data.data_dir, &args.path)?;
    println!(
        "restored {} into {}",
        args.path.display(),
        args.data.data_dir.display()
    );
    if let Some(k) = kept {
        println!("the replaced database was kept at {}", k.display());
    }
    Ok(())
}
