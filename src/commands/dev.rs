//! `merchant-admin dev ...`: tools for local development.

use crate::cli::DevCommand;
use crate::db::{self, Db};
use crate::msgapp;

/// `dev outbox`: prints the latest messages the `log` messaging-app provider recorded.
pub fn dev(cmd: &DevCommand) -> anyhow::Result<()> {
    let DevCommand::Outbox(args) = cmd;
    let db = Db::open(&db::db_path(&args.data.data_dir))?;
    let limit = args.limit;
    let rows = db
        .read_blocking(|c| Ok(msgapp::recent_messages(c, limit)?))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if rows.is_empty() {
        println!("(no outbound messages)");
    }
    for m in rows {
        println!(
            "{}  {} to {} ({}): {}",
            m.created_at, m.channel, m.recipient, m.template, m.body
        );
    }
    Ok(())
}
