//! Demo data for `setup --demo`. So far the areas that exist are people: the demo store gets
//! a small team with each store role. Later areas (catalog, orders, reviews, inbox) add their
//! seeds here. Demo team members share the owner's password.

use chrono::{DateTime, Utc};
use rusqlite::Transaction;

use super::SetupOutput;
use super::store::{add_store_member, insert_user};
use crate::auth::model::Locale;
use crate::http::error::AppError;
use crate::time;

const TEAM: [(&str, &str); 3] = [
    ("marina.admin@demo.merchant-admin.test", "admin"),
    ("joao.staff@demo.merchant-admin.test", "staff"),
    ("lia.viewer@demo.merchant-admin.test", "viewer"),
];

pub fn seed(
    tx: &Transaction<'_>,
    now: DateTime<Utc>,
    out: SetupOutput,
    password_hash: &str,
) -> Result<(), AppError> {
    let now_s = time::format(now);
    for (email, role) in TEAM {
        let user = insert_user(tx, now, email, password_hash, Locale::PtBr)?.id;
        add_store_member(tx, out.store_id, user, role, &now_s)?;
    }
    Ok(())
}
