//! SQL of storefront pages and their versions; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{PageOut, PageStatus, PageVersionOut, Seo};
use crate::db::rendered::Position;
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{PageId, StoreId};
use crate::time;

/// Earlier versions kept per page.
pub const KEEP_VERSIONS: i64 = 20;

pub fn slug_taken(slug: &str) -> AppError {
    AppError::conflict(
        ErrorCode::SlugTaken,
        format!("another page of this store has the slug {slug}"),
    )
    .with_details(serde_json::json!({ "slug": slug }))
}

const COLUMNS: &str = "id, slug, title, body_markdown, body_html, status, published_at,
    seo_title, seo_description, version, created_at, updated_at";

fn page_row(r: &Row<'_>) -> rusqlite::Result<PageOut> {
    Ok(PageOut {
        id: r.get(0)?,
        slug: r.get(1)?,
        title: r.get(2)?,
        body_markdown: r.get(3)?,
        body_html: r.get(4)?,
        status: r.get(5)?,
        published_at: r.get(6)?,
        seo: Seo {
            title: r.get(7)?,
            description: r.get(8)?,
        },
        version: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
    })
}

/// A page's whole state as a write stores it.
#[derive(Debug, Clone)]
pub struct PageRow {
    pub slug: String,
    pub title: String,
    pub body_markdown: String,
    pub body_html: String,
    pub status: PageStatus,
    pub published_at: Option<String>,
    pub seo: Seo,
    pub version: i32,
}

/// Inserts a page; 409 `slug_taken` when the store has the slug (the unique index decides,
/// so two concurrent creates cannot both take it).
pub fn insert(
    tx: &Tx<'_>,
    store: StoreId,
    id: PageId,
    p: &PageRow,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    tx.prepare_cached(
        "INSERT INTO pages (id, store_id, slug, title, body_markdown, body_html, status,
                            published_at, seo_title, seo_description, version, created_at,
                            updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)",
    )?
    .execute(params![
        id,
        store,
        p.slug,
        p.title,
        p.body_markdown,
        p.body_html,
        p.status,
        p.published_at,
        p.seo.title,
        p.seo.description,
        p.version,
        time::format(now)
    ])
    .on_constraint("pages.slug", |_| slug_taken(&p.slug))?;
    Ok(())
}

/// Replaces the page's state; false when the store has no such page.
pub fn update(
    tx: &Tx<'_>,
    store: StoreId,
    id: PageId,
    p: &PageRow,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = tx
        .prepare_cached(
            "UPDATE pages SET slug = ?3, title = ?4, body_markdown = ?5, body_html = ?6,
                    status = ?7, published_at = ?8, seo_title = ?9, seo_description = ?10,
                    version = ?11, updated_at = ?12
             WHERE store_id = ?1 AND id = ?2",
        )?
        .execute(params![
            store,
            id,
            p.slug,
            p.title,
            p.body_markdown,
            p.body_html,
            p.status,
            p.published_at,
            p.seo.title,
            p.seo.description,
            p.version,
            time::format(now)
        ])
        .on_constraint("pages.slug", |_| slug_taken(&p.slug))?;
    Ok(n == 1)
}

pub fn get(c: &Connection, store: StoreId, id: PageId) -> Result<Option<PageOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM pages WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], page_row)
        .optional()?)
}

/// A published page by its slug (a draft is None).
pub fn get_published(
    c: &Connection,
    store: StoreId,
    slug: &str,
) -> Result<Option<PageOut>, AppError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM pages WHERE store_id = ?1 AND slug = ?2 AND status = 'published'"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, slug], page_row)
        .optional()?)
}

pub fn delete(tx: &Tx<'_>, store: StoreId, id: PageId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "pages", store, &id)
}

fn filter(status: Option<PageStatus>) -> String {
    crate::db::where_clause("store_id = ?1", &[(status.is_some(), "status = ?2", "?2")])
}

/// The store's pages, newest first; `status` filters.
pub fn list(
    c: &Connection,
    store: StoreId,
    status: Option<PageStatus>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<PageOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {COLUMNS} FROM pages WHERE {} AND (created_at, id) < (?3, ?4)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5",
        filter(status)
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, status, at, id, offset], page_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count(c: &Connection, store: StoreId, status: Option<PageStatus>) -> Result<i64, AppError> {
    let sql = format!("SELECT COUNT(*) FROM pages WHERE {}", filter(status));
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, status], |r| r.get(0))?)
}

// ---- versions ----

/// Keeps `page` (its content before a save) as version `page.version`, then prunes the
/// page's versions to the last [`KEEP_VERSIONS`], in the caller's transaction.
pub fn keep_version(tx: &Tx<'_>, page: &PageOut) -> Result<(), AppError> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO page_versions (page_id, version, slug, title, body_markdown,
                                               seo_title, seo_description, saved_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        page.id,
        page.version,
        page.slug,
        page.title,
        page.body_markdown,
        page.seo.title,
        page.seo.description,
        page.updated_at
    ])?;
    crate::db::exec(
        tx,
        "DELETE FROM page_versions WHERE page_id = ?1 AND version <= (
             SELECT version FROM page_versions WHERE page_id = ?1
             ORDER BY version DESC LIMIT 1 OFFSET ?2)",
        params![page.id, KEEP_VERSIONS],
    )?;
    Ok(())
}

const VERSION_COLUMNS: &str =
    "version, slug, title, body_markdown, seo_title, seo_description, saved_at";

fn version_row(r: &Row<'_>) -> rusqlite::Result<PageVersionOut> {
    Ok(PageVersionOut {
        version: r.get(0)?,
        slug: r.get(1)?,
        title: r.get(2)?,
        body_markdown: r.get(3)?,
        seo: Seo {
            title: r.get(4)?,
            description: r.get(5)?,
        },
        saved_at: r.get(6)?,
    })
}

/// One kept version of a page (the caller has checked the page is the store's).
pub fn get_version(
    c: &Connection,
    page: PageId,
    version: i32,
) -> Result<Option<PageVersionOut>, AppError> {
    let sql =
        format!("SELECT {VERSION_COLUMNS} FROM page_versions WHERE page_id = ?1 AND version = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![page, version], version_row)
        .optional()?)
}

/// The keyset position of a version in its list: the number, zero-padded so it sorts.
pub fn version_position(v: &PageVersionOut) -> Position {
    (format!("{:010}", v.version), String::new())
}

/// A page's kept versions, newest first (the caller has checked the page is the store's).
pub fn list_versions(
    c: &Connection,
    page: PageId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<PageVersionOut>, AppError> {
    let before: i64 = after.and_then(|(v, _)| v.parse().ok()).unwrap_or(i64::MAX);
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM page_versions WHERE page_id = ?1 AND version < ?2
         ORDER BY version DESC LIMIT {limit} OFFSET ?3"
    );
    c.prepare_cached(&sql)?
        .query_map(params![page, before, offset], version_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_versions(c: &Connection, page: PageId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM page_versions WHERE page_id = ?1")?
            .query_row(params![page], |r| r.get(0))?,
    )
}
