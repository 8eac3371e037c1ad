//! `merchant-admin users deactivate|activate`: turns an account off (ending its sessions) or
//! back on, from the server's host.

use anyhow::bail;

use crate::auth::store as auth_store;
use crate::cli::UsersCommand;
use crate::clock::{Clock, SystemClock};
use crate::db::{self, Db};
use crate::text::normalize_email;

/// Deactivates or activates the account with the given e-mail.
pub fn users(cmd: &UsersCommand) -> anyhow::Result<()> {
    let (args, disable) = match cmd {
        UsersCommand::Deactivate(a) => (a, true),
        UsersCommand::Activate(a) => (a, false),
    };
    let db = Db::open(&db::db_path(&args.data.data_dir))?;
    let email = normalize_email(&args.email);
    let e = email.clone();
    let found = db
        .write_blocking(|tx| auth_store::set_disabled(tx, &e, disable, SystemClock.now()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !found {
        bail!("no account with the e-mail {email}");
    }
    if disable {
        // A running server notices another process's commit within one poll; waiting
        // ten means that once this returns, no request is served from what it
        // remembered. (Activation ends nothing, so it need not wait.)
        std::thread::sleep(db::OTHER_PROCESS_POLL * 10);
    }
    let what = if disable {
        "deactivated; every session was ended"
    } else {
        "activated"
    };
    println!("{email}: {what}");
    Ok(())
}
