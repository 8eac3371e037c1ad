//! `merchant-admin backup` and `restore`: a checked copy of the database, and putting one
//! back.

use std::io::IsTerminal;
use std::ops::ControlFlow;

use crate::cli::{BackupArgs, RestoreArgs};
use crate::db::{backup as db_backup, keys};
use crate::secrets;

/// The one line `backup` prints when stderr is not a terminal (cron, a timer, a script).
#[derive(Debug, serde::Serialize)]
pub struct Summary<'a> {
    pub path: &'a std::path::Path,
    pub bytes: u64,
    pub pages: u64,
    pub seconds: f64,
    pub verified: bool,
    pub attachments: i64,
}

impl<'a> From<&'a db_backup::BackupReport> for Summary<'a> {
    fn from(r: &'a db_backup::BackupReport) -> Self {
        Self {
            path: &r.path,
            bytes: r.bytes,
            pages: r.pages,
            seconds: r.duration.as_secs_f64(),
            verified: r.verified,
            attachments: r.attachments,
        }
    }
}

/// Writes a checked copy, showing its progress on a terminal (one JSON line otherwise), then
/// reminds the operator of the key files it leaves out.
pub fn backup(args: &BackupArgs) -> anyhow::Result<()> {
    let opts = db_backup::BackupOptions {
        verify: args.verify,
        ..db_backup::BackupOptions::default()
    };
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} pages ({percent}%) {per_sec} eta {eta}",
            )
            .expect("the template is valid"),
        );
        let r = db_backup::backup_with(&args.data.data_dir, &args.path, opts, &mut |c| {
            bar.set_length(c.total);
            bar.set_position(c.done);
            ControlFlow::Continue(())
        });
        // The last state stays on screen: pages, 100% and the rate it ran at.
        bar.finish();
        let r = r?;
        println!(
            "backup written to {} ({} bytes, {} pages, {} attachments) in {:.1} s; {} ok",
            r.path.display(),
            r.bytes,
            r.pages,
            r.attachments,
            r.duration.as_secs_f64(),
            if r.verified {
                "integrity check"
            } else {
                "quick check"
            }
        );
    } else {
        let r = db_backup::backup_with(&args.data.data_dir, &args.path, opts, &mut |_| {
            ControlFlow::Continue(())
        })?;
        println!("{}", serde_json::to_string(&Summary::from(&r))?);
    }
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
