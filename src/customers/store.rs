//! SQL of customers; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{Address, CustomerOut};
use crate::db::rendered::Position;
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{CustomerId, StoreId};
use crate::time;

const COLUMNS: &str =
    "id, store_id, name, email, phone, addresses, accepts_marketing, orders_count,
                       total_spent_cents, created_at, updated_at, tags";

/// A customer from a row of [`COLUMNS`] (marketing's segment lists read the same columns).
pub fn row(r: &Row<'_>) -> rusqlite::Result<CustomerOut> {
    Ok(CustomerOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        name: r.get(2)?,
        email: r.get(3)?,
        phone: r.get(4)?,
        addresses: crate::db::json_column(r, 5)?,
        accepts_marketing: r.get(6)?,
        tags: crate::db::json_column(r, 11)?,
        orders_count: r.get(7)?,
        total_spent_cents: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

fn email_taken(_: rusqlite::Error) -> AppError {
    AppError::conflict(
        ErrorCode::Conflict,
        "a customer of this store already has that e-mail",
    )
}

fn addresses_json(a: &[Address]) -> Result<String, AppError> {
    serde_json::to_string(a).map_err(AppError::internal)
}

fn tags_json(t: &[String]) -> Result<String, AppError> {
    serde_json::to_string(t).map_err(AppError::internal)
}

/// Most tags a customer carries.
pub const MAX_TAGS: usize = 50;

/// What [`add_tag`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tagged {
    Added,
    /// The customer had it: nothing changed.
    Had,
    /// The customer has [`MAX_TAGS`] already: nothing changed.
    Full,
    NoSuchCustomer,
}

/// Adds `tag` to the customer.
pub fn add_tag(
    tx: &Tx<'_>,
    store: StoreId,
    id: CustomerId,
    tag: &str,
    now: DateTime<Utc>,
) -> Result<Tagged, AppError> {
    let Some(c) = get(tx, store, id)? else {
        return Ok(Tagged::NoSuchCustomer);
    };
    if c.tags.iter().any(|t| t == tag) {
        return Ok(Tagged::Had);
    }
    if c.tags.len() >= MAX_TAGS {
        return Ok(Tagged::Full);
    }
    let f = Fields {
        tags: Some([c.tags, vec![tag.to_owned()]].concat()),
        ..Fields::default()
    };
    update(tx, store, id, &f, now)?;
    Ok(Tagged::Added)
}

/// The fields a write sets; None leaves a field as it is (on update).
#[derive(Debug, Default)]
pub struct Fields {
    pub name: Option<String>,
    /// Some(None) clears the e-mail.
    pub email: Option<Option<String>>,
    pub phone: Option<Option<String>>,
    pub addresses: Option<Vec<Address>>,
    pub accepts_marketing: Option<bool>,
    pub tags: Option<Vec<String>>,
}

pub fn insert(
    tx: &Tx<'_>,
    store: StoreId,
    id: CustomerId,
    f: &Fields,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO customers (id, store_id, name, email, phone, addresses, accepts_marketing,
                                created_at, updated_at, tags)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9)",
        params![
            id,
            store,
            f.name,
            f.email.clone().flatten(),
            f.phone.clone().flatten(),
            addresses_json(f.addresses.as_deref().unwrap_or_default())?,
            f.accepts_marketing.unwrap_or(false),
            time::format(now),
            tags_json(f.tags.as_deref().unwrap_or_default())?
        ],
    )
    .on_constraint("customers.email", email_taken)?;
    // A new customer counts in the store's analytics, in this transaction.
    crate::analytics::store::count_customer(tx, store, &time::format(now), 1)?;
    Ok(())
}

/// Applies `f`; false when the store has no such customer.
pub fn update(
    tx: &Tx<'_>,
    store: StoreId,
    id: CustomerId,
    f: &Fields,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let addresses = f.addresses.as_deref().map(addresses_json).transpose()?;
    let tags = f.tags.as_deref().map(tags_json).transpose()?;
    let n = tx
        .execute(
            "UPDATE customers SET name = COALESCE(?3, name),
                    email = CASE WHEN ?4 THEN ?5 ELSE email END,
                    phone = CASE WHEN ?6 THEN ?7 ELSE phone END,
                    addresses = COALESCE(?8, addresses),
                    accepts_marketing = COALESCE(?9, accepts_marketing), updated_at = ?10,
                    tags = COALESCE(?11, tags)
             WHERE store_id = ?1 AND id = ?2",
            params![
                store,
                id,
                f.name,
                f.email.is_some(),
                f.email.clone().flatten(),
                f.phone.is_some(),
                f.phone.clone().flatten(),
                addresses,
                f.accepts_marketing,
                time::format(now),
                tags
            ],
        )
        .on_constraint("customers.email", email_taken)?;
    Ok(n == 1)
}

pub fn get(
    c: &Connection,
    store: StoreId,
    id: CustomerId,
) -> Result<Option<CustomerOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM customers WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], row)
        .optional()?)
}

/// The store's customer with this e-mail (the unique key, case-insensitive); with no
/// e-mail, the oldest with this phone: whom a storefront checkout is for.
pub fn find_by_contact(
    c: &Connection,
    store: StoreId,
    email: Option<&str>,
    phone: Option<&str>,
) -> Result<Option<CustomerId>, AppError> {
    // An e-mail decides alone: a stranger's phone beside a new e-mail must not attach an
    // order to the customer who owns that phone.
    if let Some(e) = email {
        return Ok(c
            .prepare_cached("SELECT id FROM customers WHERE store_id = ?1 AND email = ?2")?
            .query_row(params![store, e], |r| r.get(0))
            .optional()?);
    }
    let Some(p) = phone else {
        return Ok(None);
    };
    Ok(c.prepare_cached(
        "SELECT id FROM customers WHERE store_id = ?1 AND phone = ?2
         ORDER BY created_at, id LIMIT 1",
    )?
    .query_row(params![store, p], |r| r.get(0))
    .optional()?)
}

/// Deletes a customer and takes it out of the store's analytics (new customers count those
/// that exist), in the caller's transaction.
pub fn delete(tx: &Tx<'_>, store: StoreId, id: CustomerId) -> Result<bool, AppError> {
    let created_at: Option<String> = tx
        .prepare_cached(
            "DELETE FROM customers WHERE store_id = ?1 AND id = ?2 RETURNING created_at",
        )?
        .query_row(params![store, id], |r| r.get(0))
        .optional()?;
    match created_at {
        Some(at) => {
            crate::analytics::store::count_customer(tx, store, &at, -1)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

const FILTER: &str = "store_id = ?1 AND (?2 IS NULL OR name LIKE ?2 ESCAPE '\\'
    OR email LIKE ?2 ESCAPE '\\' OR phone LIKE ?2 ESCAPE '\\')";

/// The store's customers, newest first.
pub fn list(
    c: &Connection,
    store: StoreId,
    search: Option<&str>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<CustomerOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {COLUMNS} FROM customers WHERE {FILTER} AND (created_at, id) < (?3, ?4)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    let pattern = search.map(crate::db::contains_pattern);
    c.prepare_cached(&sql)?
        .query_map(params![store, pattern, at, id, offset], row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count(c: &Connection, store: StoreId, search: Option<&str>) -> Result<i64, AppError> {
    let Some(search) = search else {
        return crate::db::counts::get(c, store, "customers", "");
    };
    let sql = format!("SELECT 1 FROM customers WHERE {FILTER}");
    let pattern = crate::db::contains_pattern(search);
    crate::db::counts::capped(c, &sql, params![store, pattern])
}

/// Whether the store has this customer.
pub fn exists(c: &Connection, store: StoreId, id: CustomerId) -> Result<bool, AppError> {
    Ok(
        c.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM customers WHERE store_id = ?1 AND id = ?2)",
        )?
        .query_row(params![store, id], |r| r.get(0))?,
    )
}
