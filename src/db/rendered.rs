//! Rows the database keeps already rendered as JSON (orders, reviews, storefront products),
//! and the keyset position lists page on. Storage fills these; `http::page` answers them.

use rusqlite::{Connection, OptionalExtension, ToSql, params};

use super::counts;
use crate::error::AppError;
use crate::ids::StoreId;

/// The keyset position of the "newest first" lists: a timestamp and an id, as text.
pub type Position = (String, String);

/// A row we already rendered as JSON ourselves (an order's stored body), answered as is.
#[derive(Debug, Clone)]
pub struct RenderedJson(pub String);

/// The rows of a page the database holds already rendered, written by the query straight
/// into what becomes the response body: `{"data":[` then the rows, comma-separated. A page
/// costs one buffer and one copy of each row. Rows are JSON we wrote ourselves, so they are
/// not parsed again to prove it.
#[derive(Debug)]
pub struct RenderedRows {
    body: Vec<u8>,
    /// Where the body ends after each row, to drop the extra row fetched for `has_more`.
    ends: Vec<usize>,
    limit: usize,
    /// The position of the page's last row: the only one a `next_cursor` can name.
    last: Option<Position>,
}

impl RenderedRows {
    pub fn new(limit: usize) -> Self {
        // An order is most of a KiB; the rest is room for the envelope's tail.
        let mut body = Vec::with_capacity((limit + 1) * 1024 + 256);
        body.extend_from_slice(br#"{"data":["#);
        Self {
            body,
            ends: Vec::with_capacity(limit + 1),
            limit,
            last: None,
        }
    }

    /// Appends every row of a `SELECT created_at, id, rendered ...` in list order.
    pub fn extend(&mut self, mut rows: rusqlite::Rows<'_>) -> Result<(), AppError> {
        while let Some(r) = rows.next()? {
            let json = r.get_ref(2)?.as_bytes().map_err(rusqlite::Error::from)?;
            self.push(json, || Ok::<_, rusqlite::Error>((r.get(0)?, r.get(1)?)))?;
        }
        Ok(())
    }

    /// The rows to fetch: one more than the page, to learn whether another page follows.
    pub fn fetch(&self) -> usize {
        self.limit + 1
    }

    /// Appends a row in list order. `position` is asked only of the page's last row, so the
    /// others cost no keyset values.
    pub fn push<E>(
        &mut self,
        json: &[u8],
        position: impl FnOnce() -> Result<Position, E>,
    ) -> Result<(), E> {
        if self.ends.len() + 1 == self.limit {
            self.last = Some(position()?);
        }
        if !self.ends.is_empty() {
            self.body.push(b',');
        }
        self.body.extend_from_slice(json);
        self.ends.push(self.body.len());
        Ok(())
    }

    pub fn has_more(&self) -> bool {
        self.ends.len() > self.limit
    }

    /// The position of the page's last row, when the page is full.
    pub fn last(&self) -> Option<&Position> {
        self.last.as_ref()
    }

    /// The body so far (`{"data":[` and the page's rows, without the extra one) and whether
    /// another page follows; the caller closes the envelope.
    pub fn finish(self) -> (Vec<u8>, bool) {
        let has_more = self.has_more();
        let mut body = self.body;
        if has_more {
            body.truncate(self.ends[self.limit - 1]);
        }
        (body, has_more)
    }
}

/// A table that keeps each row's API JSON in `rendered` (orders, reviews), listed newest
/// first by store, filtered by `status` and by one id column (an order's customer, a
/// review's product).
#[derive(Clone, Copy)]
pub struct RenderedTable {
    pub table: &'static str,
    /// The id column the list filters on.
    pub by: &'static str,
}

impl RenderedTable {
    /// Row `id` as the API shows it, if it belongs to `store`.
    pub fn get(
        self,
        c: &Connection,
        store: StoreId,
        id: &dyn ToSql,
    ) -> Result<Option<RenderedJson>, AppError> {
        let sql = format!(
            "SELECT rendered FROM {} WHERE store_id = ?1 AND id = ?2",
            self.table
        );
        Ok(c.prepare_cached(&sql)?
            .query_row(params![store, id], |r| r.get(0).map(RenderedJson))
            .optional()?)
    }

    /// The WHERE clause of the filters in use; `?1` is the store, `?2` the status, `?3` the id.
    fn filter(self, status: Option<&str>, by: Option<&dyn ToSql>) -> String {
        super::where_clause(
            "store_id = ?1",
            &[
                (status.is_some(), "status = ?2", "?2"),
                (by.is_some(), &format!("{} = ?3", self.by), "?3"),
            ],
        )
    }

    /// The page after the keyset position `after`, appended to `page`.
    pub fn list(
        self,
        c: &Connection,
        (store, status, by): (StoreId, Option<&str>, Option<&dyn ToSql>),
        after: Option<&Position>,
        page: &mut RenderedRows,
        offset: i64,
    ) -> Result<(), AppError> {
        let (at, id) = after
            .cloned()
            .unwrap_or_else(|| ("9999".into(), String::new()));
        let sql = format!(
            "SELECT created_at, id, rendered FROM {} WHERE {} AND (created_at, id) < (?4, ?5)
             ORDER BY created_at DESC, id DESC LIMIT {} OFFSET ?6",
            self.table,
            self.filter(status, by),
            page.fetch()
        );
        let mut stmt = c.prepare_cached(&sql)?;
        page.extend(stmt.query(params![store, status, by, at, id, offset])?)
    }

    /// How many rows the same filters match: a counter of `list_counts` for no filter or one,
    /// a count capped at [`counts::CAP`] for both (`by` is the id, as text).
    pub fn count(
        self,
        c: &Connection,
        (store, status, by): (StoreId, Option<&str>, Option<&str>),
    ) -> Result<i64, AppError> {
        let key = match (status, by) {
            (Some(_), Some(_)) => {
                let sql = format!(
                    "SELECT 1 FROM {} WHERE {}",
                    self.table,
                    self.filter(status, by.as_ref().map(|b| b as &dyn ToSql))
                );
                return counts::capped(c, &sql, params![store, status, by]);
            }
            (Some(s), None) => counts::key(Some(("status", s))),
            (None, Some(id)) => counts::key(Some((self.by, id))),
            (None, None) => counts::key(None),
        };
        counts::get(c, store, self.table, &key)
    }
}
