//! The command line's bodies, one function per subcommand: `main.rs` parses the arguments
//! and calls one of these. Each prints what the operator reads and returns the error
//! `main` reports; storage work goes through `db` and the areas' stores.

mod backup;
mod billing;
mod dev;
mod healthcheck;
mod migrate;
mod serve;
mod setup;
mod users;

pub use backup::{backup, restore};
pub use billing::billing;
pub use dev::dev;
pub use healthcheck::healthcheck;
pub use migrate::{migrate, version};
pub use serve::serve;
pub use setup::setup;
pub use users::users;
