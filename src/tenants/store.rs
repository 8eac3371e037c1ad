//! SQL of organizations and stores. Every store query is scoped by the caller: a row the
//! caller cannot see is never returned.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{PaymentMethod, ShippingZone, StoreOut, TenantOut};
use crate::auth::model::Locale;
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::http::permissions::Role;
use crate::ids::{StoreId, TenantId, UserId};
use crate::text::slugify;
use crate::time;

fn slug_taken(what: &str) -> AppError {
    AppError::conflict(
        ErrorCode::SlugTaken,
        format!("a {what} with this name already exists"),
    )
}

const TENANT_COLUMNS: &str = "t.id, t.name, t.slug, t.currency, t.timezone, t.locale, t.created_at";

fn tenant_row(r: &Row<'_>) -> rusqlite::Result<TenantOut> {
    Ok(TenantOut {
        id: r.get(0)?,
        name: r.get(1)?,
        slug: r.get(2)?,
        currency: r.get(3)?,
        timezone: r.get(4)?,
        locale: r.get(5)?,
        created_at: r.get(6)?,
    })
}

/// Creates an organization with `owner` as its owner.
pub fn create_tenant(
    tx: &Tx<'_>,
    owner: UserId,
    name: &str,
    locale: Locale,
    plan_code: Option<&str>,
    now: DateTime<Utc>,
) -> Result<TenantOut, AppError> {
    let (id, now_s, slug) = (TenantId::new(), time::format(now), slugify(name));
    crate::db::exec(
        tx,
        "INSERT INTO tenants (id, name, slug, locale, plan_code, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![id, name, slug, locale, plan_code, now_s],
    )
    .on_constraint("tenants.slug", |_| slug_taken("organization"))?;
    crate::db::exec(
        tx,
        "INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES (?1, ?2, 'owner', ?3)",
        params![id, owner, now_s],
    )?;
    // Every organization has its subscription from the start: a trial (billing area).
    crate::billing::subscriptions::start_trial(tx, id, plan_code, now)?;
    get_tenant(tx, owner, id)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("tenant vanished")))
}

/// The caller's role in an organization (`owner` or `member`), if any.
pub fn tenant_role(
    c: &Connection,
    tenant: TenantId,
    user: UserId,
) -> Result<Option<String>, AppError> {
    Ok(c.query_row(
        "SELECT role FROM tenant_members WHERE tenant_id = ?1 AND user_id = ?2",
        params![tenant, user],
        |r| r.get(0),
    )
    .optional()?)
}

/// An organization the caller belongs to (directly, or through one of its stores).
pub fn get_tenant(
    c: &Connection,
    user: UserId,
    id: TenantId,
) -> Result<Option<TenantOut>, AppError> {
    let sql = format!(
        "SELECT {TENANT_COLUMNS} FROM tenants t WHERE t.id = ?1 AND (
            EXISTS (SELECT 1 FROM tenant_members m WHERE m.tenant_id = t.id AND m.user_id = ?2)
            OR EXISTS (SELECT 1 FROM stores s JOIN store_members sm ON sm.store_id = s.id
                       WHERE s.tenant_id = t.id AND sm.user_id = ?2))"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![id, user], tenant_row)
        .optional()?)
}

/// What the caller may do at the organization's level: everything as one of its owners,
/// else the union of their store roles' permissions in its stores; None when they belong
/// to it in no way.
pub fn tenant_permissions(
    c: &Connection,
    tenant: TenantId,
    user: UserId,
) -> Result<Option<crate::http::permissions::PermissionSet>, AppError> {
    use crate::http::permissions::{PermissionSet, Role};
    if tenant_role(c, tenant, user)?.as_deref() == Some("owner") {
        return Ok(Some(PermissionSet::all()));
    }
    let roles: Vec<String> = c
        .prepare_cached(
            "SELECT sm.role FROM store_members sm JOIN stores s ON s.id = sm.store_id
             WHERE s.tenant_id = ?1 AND sm.user_id = ?2",
        )?
        .query_map(params![tenant, user], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if roles.is_empty() {
        return Ok(None);
    }
    Ok(Some(PermissionSet::of(
        roles
            .iter()
            .filter_map(|r| Role::parse(r))
            .flat_map(|r| r.permissions().iter()),
    )))
}

/// The caller's organizations, newest first, keyset-paged on (created_at, id).
pub fn list_tenants(
    c: &Connection,
    user: UserId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<TenantOut>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let sql = format!(
        "SELECT {TENANT_COLUMNS} FROM tenants t
         WHERE (t.created_at, t.id) < (?2, ?3) AND t.id IN (
             SELECT tenant_id FROM tenant_members WHERE user_id = ?1
             UNION SELECT s.tenant_id FROM stores s JOIN store_members sm ON sm.store_id = s.id
                   WHERE sm.user_id = ?1)
         ORDER BY t.created_at DESC, t.id DESC LIMIT {limit} OFFSET ?4"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![user, at, id, offset], tenant_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn update_tenant(
    tx: &Tx<'_>,
    id: TenantId,
    name: Option<&str>,
    timezone: Option<&str>,
    locale: Option<Locale>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE tenants SET name = COALESCE(?2, name), timezone = COALESCE(?3, timezone),
                            locale = COALESCE(?4, locale), updated_at = ?5
         WHERE id = ?1",
        params![id, name, timezone, locale, time::format(now)],
    )?;
    Ok(())
}

const STORE_COLUMNS: &str = "s.id, s.tenant_id, s.name, s.slug, s.payment_methods, \
     s.shipping_zones, s.custom_domain, s.created_at";

fn store_row(r: &Row<'_>) -> rusqlite::Result<StoreOut> {
    Ok(StoreOut {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        name: r.get(2)?,
        slug: r.get(3)?,
        payment_methods: crate::db::json_column(r, 4)?,
        shipping_zones: crate::db::json_column(r, 5)?,
        custom_domain: r.get(6)?,
        created_at: r.get(7)?,
    })
}

/// Creates a store in an organization, with `creator` as its owner.
pub fn create_store(
    tx: &Tx<'_>,
    tenant: TenantId,
    creator: UserId,
    name: &str,
    now: DateTime<Utc>,
) -> Result<StoreOut, AppError> {
    let (id, now_s) = (StoreId::new(), time::format(now));
    crate::db::exec(
        tx,
        "INSERT INTO stores (id, tenant_id, name, slug, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![id, tenant, name, slugify(name), now_s],
    )
    .on_constraint("stores.tenant_id", |_| slug_taken("store"))?;
    add_store_member(tx, id, creator, "owner", &now_s)?;
    // Every store has a brand system from the start (version 1, built from its name).
    crate::brand::writes::create_default(tx, id, name, creator, now)?;
    get_store(tx, id)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("store vanished")))
}

/// A store by id. Callers reach it only through `StoreScope`, which checked access.
pub fn get_store(c: &Connection, id: StoreId) -> Result<Option<StoreOut>, AppError> {
    let sql = format!("SELECT {STORE_COLUMNS} FROM stores s WHERE s.id = ?1");
    Ok(c.prepare_cached(&sql)?
        .query_row([id], store_row)
        .optional()?)
}

/// The stores the caller can see, newest first, keyset-paged on (created_at, id).
pub fn list_stores(
    c: &Connection,
    user: UserId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<StoreOut>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let sql = format!(
        "SELECT {STORE_COLUMNS} FROM stores s
         WHERE (s.created_at, s.id) < (?2, ?3) AND (
             EXISTS (SELECT 1 FROM store_members sm WHERE sm.store_id = s.id AND sm.user_id = ?1)
             OR EXISTS (SELECT 1 FROM tenant_members tm WHERE tm.tenant_id = s.tenant_id
                          AND tm.user_id = ?1 AND tm.role = 'owner'))
         ORDER BY s.created_at DESC, s.id DESC LIMIT {limit} OFFSET ?4"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![user, at, id, offset], store_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A change to a store's name and settings, already validated; `None` keeps a field.
#[derive(Debug, Default)]
pub struct StoreChange {
    pub name: Option<String>,
    pub payment_methods: Option<Vec<PaymentMethod>>,
    pub shipping_zones: Option<Vec<ShippingZone>>,
    /// `Some(None)` removes the domain.
    pub custom_domain: Option<Option<String>>,
}

impl StoreChange {
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.payment_methods.is_none()
            && self.shipping_zones.is_none()
            && self.custom_domain.is_none()
    }
}

/// Applies a change. Each setting's `*_set_at` is stamped when it goes from unset to set,
/// kept while it stays set and cleared with it (the onboarding checklist's `done_at`). A
/// domain another store has is 409 `conflict`.
pub fn update_store(
    tx: &Tx<'_>,
    id: StoreId,
    change: &StoreChange,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    fn json<T: serde::Serialize>(v: &T) -> Result<String, AppError> {
        serde_json::to_string(v).map_err(AppError::internal)
    }
    let methods = change.payment_methods.as_ref().map(json).transpose()?;
    let zones = change.shipping_zones.as_ref().map(json).transpose()?;
    let (domain_given, domain) = match &change.custom_domain {
        Some(d) => (true, d.as_deref()),
        None => (false, None),
    };
    crate::db::exec(
        tx,
        "UPDATE stores SET
             name = COALESCE(?2, name),
             payment_methods = COALESCE(?3, payment_methods),
             payment_methods_set_at = CASE WHEN ?3 IS NULL THEN payment_methods_set_at
                 WHEN ?3 = '[]' THEN NULL ELSE COALESCE(payment_methods_set_at, ?7) END,
             shipping_zones = COALESCE(?4, shipping_zones),
             shipping_zones_set_at = CASE WHEN ?4 IS NULL THEN shipping_zones_set_at
                 WHEN ?4 = '[]' THEN NULL ELSE COALESCE(shipping_zones_set_at, ?7) END,
             custom_domain = CASE WHEN ?5 THEN ?6 ELSE custom_domain END,
             custom_domain_set_at = CASE WHEN NOT ?5 THEN custom_domain_set_at
                 WHEN ?6 IS NULL THEN NULL ELSE COALESCE(custom_domain_set_at, ?7) END,
             updated_at = ?7
         WHERE id = ?1",
        params![
            id,
            change.name,
            methods,
            zones,
            domain_given,
            domain,
            time::format(now)
        ],
    )
    .on_constraint("stores.custom_domain", |_| {
        AppError::conflict(
            ErrorCode::Conflict,
            "another store already uses this domain",
        )
    })?;
    Ok(())
}

/// How many stores the caller can see (for `include_total`).
pub fn count_stores(c: &Connection, user: UserId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM stores s WHERE
             EXISTS (SELECT 1 FROM store_members sm WHERE sm.store_id = s.id AND sm.user_id = ?1)
             OR EXISTS (SELECT 1 FROM tenant_members tm WHERE tm.tenant_id = s.tenant_id
                          AND tm.user_id = ?1 AND tm.role = 'owner')",
        [user],
        |r| r.get(0),
    )?)
}

/// How many organizations the caller belongs to (for `include_total`).
pub fn count_tenants(c: &Connection, user: UserId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM (
             SELECT tenant_id FROM tenant_members WHERE user_id = ?1
             UNION SELECT s.tenant_id FROM stores s JOIN store_members sm ON sm.store_id = s.id
                   WHERE sm.user_id = ?1)",
        [user],
        |r| r.get(0),
    )?)
}

/// Makes `user_id` a member of the store with `role` (`now` already formatted).
pub fn add_store_member(
    tx: &Tx<'_>,
    store_id: StoreId,
    user_id: UserId,
    role: &str,
    now: &str,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO store_members (store_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![store_id, user_id, role, now],
    )?;
    Ok(())
}

/// A member of a store.
pub struct MemberRow {
    pub user_id: UserId,
    pub email: String,
    pub role: Role,
    pub created_at: String,
}

pub fn list_members(
    c: &Connection,
    store: StoreId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<MemberRow>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let mut stmt = c.prepare_cached(&format!(
        "SELECT m.user_id, u.email, m.role, m.created_at FROM store_members m
         JOIN users u ON u.id = m.user_id
         WHERE m.store_id = ?1 AND (m.created_at, m.user_id) < (?2, ?3)
         ORDER BY m.created_at DESC, m.user_id DESC LIMIT {limit} OFFSET ?4"
    ))?;
    let rows = stmt
        .query_map(params![store, at, id, offset], |r| {
            Ok(MemberRow {
                user_id: r.get(0)?,
                email: r.get(1)?,
                role: crate::db::parse_column(r, 2, Role::parse)?,
                created_at: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn member_role(
    c: &Connection,
    store: StoreId,
    user: UserId,
) -> Result<Option<String>, AppError> {
    Ok(c.query_row(
        "SELECT role FROM store_members WHERE store_id = ?1 AND user_id = ?2",
        params![store, user],
        |r| r.get(0),
    )
    .optional()?)
}

/// Owners of a store: its owner members and the owners of its organization.
pub fn count_owners(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(DISTINCT user_id) FROM (
             SELECT user_id FROM store_members WHERE store_id = ?1 AND role = 'owner'
             UNION SELECT tm.user_id FROM tenant_members tm JOIN stores s ON s.tenant_id = tm.tenant_id
                   WHERE s.id = ?1 AND tm.role = 'owner')",
        [store],
        |r| r.get(0),
    )?)
}

pub fn set_member_role(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    role: &str,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE store_members SET role = ?3 WHERE store_id = ?1 AND user_id = ?2",
        params![store, user, role],
    )?;
    Ok(())
}

pub fn remove_member(tx: &Tx<'_>, store: StoreId, user: UserId) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "DELETE FROM store_members WHERE store_id = ?1 AND user_id = ?2",
        params![store, user],
    )?;
    Ok(())
}

/// True when `user` owns the organization the store belongs to.
pub fn is_organization_owner(
    c: &Connection,
    store: StoreId,
    user: UserId,
) -> Result<bool, AppError> {
    Ok(c.query_row(
        "SELECT EXISTS (SELECT 1 FROM tenant_members tm JOIN stores s ON s.tenant_id = tm.tenant_id
                        WHERE s.id = ?1 AND tm.user_id = ?2 AND tm.role = 'owner')",
        params![store, user],
        |r| r.get(0),
    )?)
}

pub fn count_members(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM store_members WHERE store_id = ?1",
        [store],
        |r| r.get(0),
    )?)
}
