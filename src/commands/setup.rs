//! `merchant-admin setup`: the first owner, organization and store, from flags or prompts.

use std::io::{IsTerminal, Write};

use anyhow::bail;

use crate::cli::SetupArgs;
use crate::clock::{Clock, SystemClock};
use crate::db::{self, Db};

/// Runs setup and prints its ids as one JSON object.
pub fn setup(args: &SetupArgs) -> anyhow::Result<()> {
    let input = crate::setup::SetupInput {
        email: value_or_prompt(args.email.as_ref(), "email", "E-mail", false)?,
        password: value_or_prompt(args.password.as_ref(), "password", "Password", true)?,
        org_name: value_or_prompt(
            args.org_name.as_ref(),
            "org-name",
            "Organization name",
            false,
        )?,
        store_name: value_or_prompt(args.store_name.as_ref(), "store-name", "Store name", false)?,
        demo: args.demo,
    };
    db::create_data_dir(&args.data.data_dir)?;
    let db = Db::open(&db::db_path(&args.data.data_dir))?;
    let out = crate::setup::run(&db, SystemClock.now(), &input)?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

/// A flag's value, or a prompt for it when stdin is a terminal (never in scripts).
fn value_or_prompt(
    v: Option<&String>,
    flag: &str,
    label: &str,
    secret: bool,
) -> anyhow::Result<String> {
    if let Some(v) = v {
        return Ok(v.clone());
    }
    if !std::io::stdin().is_terminal() {
        bail!("--{flag} is required (stdin is not a terminal, so it cannot be asked for)");
    }
    if secret {
        return Ok(rpassword::prompt_password(format!("{label}: "))?);
    }
    eprint!("{label}: ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_owned())
}
