//! The one `Page<T>` envelope (spec 2.2) and its query parameters.
//!
//! Lists are keyset-paged: the cursor is the signed position of the last row shown
//! ([`cursor`]). Store functions fetch `limit + 1` rows; [`Page::from_rows`] (or
//! [`RenderedRows`], for rows stored rendered) derives `has_more`. The database trip itself
//! is `Db::read_page`: nothing here touches storage.

mod cursor;
mod params;
mod rendered;

use serde::Serialize;
use utoipa::ToSchema;

pub use cursor::CursorKey;
pub use params::{DEFAULT_LIMIT, MAX_LIMIT, NoFilter, PageParams, PageQuery, Paged};
pub use rendered::RenderedPage;

use crate::db::rendered::{Position, RenderedRows};
use crate::error::AppError;

/// The envelope of every collection response.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    /// Items of this page, in the order the endpoint defines.
    pub data: Vec<T>,
    /// Another page follows.
    pub has_more: bool,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Present only when `include_total=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
}

impl<T> Page<T> {
    /// A short fixed list (a catalog) served whole as one page, in the envelope every list
    /// shares (spec 9.4).
    pub fn whole(data: Vec<T>) -> Self {
        Self {
            data,
            has_more: false,
            next_cursor: None,
            total: None,
        }
    }

    /// Builds a page from up to `limit + 1` rows in list order. `position` gives a row's
    /// keyset position, which becomes the signed `next_cursor`.
    pub fn from_rows<R, K: Serialize>(
        mut rows: Vec<R>,
        params: &PageParams,
        scope: &str,
        position: impl Fn(&R) -> K,
        map: impl FnMut(R) -> T,
    ) -> Self {
        let limit = params.limit as usize;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if has_more {
            rows.last()
                .map(|last| params.key.encode(scope, &position(last)))
        } else {
            None
        };
        Self {
            data: rows.into_iter().map(map).collect(),
            has_more,
            next_cursor,
            total: None,
        }
    }

    #[must_use]
    pub fn with_total(mut self, total: Option<i64>) -> Self {
        self.total = total;
        self
    }
}

impl PageParams {
    /// Runs one keyset-paged list on a reader connection: `rows(conn, after, fetch_limit,
    /// offset)` fetches the page (plus one), `total(conn)` counts when `include_total` asks,
    /// and `position` gives the cursor of a row. `scope` binds cursors to this list.
    pub async fn list<R, T>(
        &self,
        db: &crate::db::Db,
        scope: &str,
        rows: impl FnOnce(
            &rusqlite::Connection,
            Option<&Position>,
            i64,
            i64,
        ) -> Result<Vec<R>, AppError>
        + Send
        + 'static,
        total: impl FnOnce(&rusqlite::Connection) -> Result<i64, AppError> + Send + 'static,
        position: impl Fn(&R) -> Position,
        map: impl FnMut(R) -> T,
    ) -> Result<Page<T>, AppError>
    where
        R: Send + 'static,
    {
        let (fetch, offset) = (self.fetch_limit(), self.offset());
        let after = self.position(scope)?;
        let (found, count) = db
            .read_page(
                after,
                self.include_total,
                move |c, after| rows(c, after, fetch, offset),
                total,
            )
            .await?;
        Ok(Page::from_rows(found, self, scope, position, map).with_total(count))
    }

    /// [`PageParams::list`] for rows stored rendered: `rows(conn, after, page, offset)`
    /// appends the page (plus one) to `page`; the rest is the same.
    pub async fn list_rendered(
        &self,
        db: &crate::db::Db,
        scope: &str,
        rows: impl FnOnce(
            &rusqlite::Connection,
            Option<&Position>,
            &mut RenderedRows,
            i64,
        ) -> Result<(), AppError>
        + Send
        + 'static,
        total: impl FnOnce(&rusqlite::Connection) -> Result<i64, AppError> + Send + 'static,
    ) -> Result<RenderedPage, AppError> {
        let (limit, offset) = (self.limit as usize, self.offset());
        let after = self.position(scope)?;
        let (found, total) = db
            .read_page(
                after,
                self.include_total,
                move |c, after| {
                    let mut found = RenderedRows::new(limit);
                    rows(c, after, &mut found, offset)?;
                    Ok(found)
                },
                total,
            )
            .await?;
        let next_cursor = if found.has_more() {
            found.last().map(|p| self.key.encode(scope, p))
        } else {
            None
        };
        Ok(RenderedPage {
            rows: found,
            next_cursor,
            total,
        })
    }
}
