//! Totals of lists (issue 22): `include_total=true` costs what the page costs.
//!
//! A list with no filter, or filtered by one enum or one foreign key, reads its total from
//! `list_counts`, one row per store, list and filter value, which triggers keep in the
//! transaction of every write (migration V36), so no write path can forget it. Any other
//! filter (free text, two filters at once) counts the matching rows, but at most [`CAP`]:
//! such a total of [`CAP`] means "that many or more".

use rusqlite::{Connection, OptionalExtension, Params, params};

use crate::error::AppError;
use crate::ids::{StoreId, TenantId};

/// The most rows a total counts when no counter answers it.
pub const CAP: i64 = 10_000;

/// The `list_counts` key of one filter: `""` for the whole list, `"<column>:<value>"` for
/// one filter (`status:paid`, `customer_id:<uuid>`).
pub fn key(filter: Option<(&str, &str)>) -> String {
    filter.map_or_else(String::new, |(column, value)| format!("{column}:{value}"))
}

/// The counted total of `list` in `store` under filter `key` (see [`key`]).
pub fn get(c: &Connection, store: StoreId, list: &str, key: &str) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT n FROM list_counts WHERE store_id = ?1 AND list = ?2 AND key = ?3",
    )?
    .query_row(params![store, list, key], |r| r.get(0))
    .optional()?
    .unwrap_or(0))
}

/// The sum of a counter over every store of `tenant` (the plan's limits: an organization's
/// products, its orders of one month).
pub fn tenant_sum(
    c: &Connection,
    tenant: TenantId,
    list: &str,
    key: &str,
) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COALESCE(SUM(n), 0) FROM stores s
         JOIN list_counts lc ON lc.store_id = s.id AND lc.list = ?2 AND lc.key = ?3
         WHERE s.tenant_id = ?1",
    )?
    .query_row(params![tenant, list, key], |r| r.get(0))?)
}

/// How many rows `rows` (a `SELECT 1 FROM .. WHERE ..` without LIMIT) yields, at most
/// [`CAP`]: a total no counter keeps stops once it has shown there are very many.
pub fn capped(c: &Connection, rows: &str, params: impl Params) -> Result<i64, AppError> {
    let sql = format!("SELECT COUNT(*) FROM ({rows} LIMIT {CAP})");
    Ok(c.prepare_cached(&sql)?.query_row(params, |r| r.get(0))?)
}
