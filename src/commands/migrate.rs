//! `merchant-admin migrate` and `version`: the schema the database has and the one this
//! binary brings.

use crate::cli::DataDirArgs;
use crate::db::{self, migrate};

/// Brings the database to this binary's schema (creating it if missing).
pub fn migrate(args: &DataDirArgs) -> anyhow::Result<()> {
    db::create_data_dir(&args.data_dir)?;
    let mut c = db::open_connection(&db::db_path(&args.data_dir))?;
    migrate::run(&mut c)?;
    println!(
        "database at schema version {}",
        migrate::applied_version(&c)?
    );
    Ok(())
}

/// Prints the binary's version and the schema version it migrates to.
pub fn version() -> anyhow::Result<()> {
    println!(
        "merchant-admin {} (schema version {})",
        env!("CARGO_PKG_VERSION"),
        migrate::latest_version()
    );
    Ok(())
}
