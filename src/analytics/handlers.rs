//! Analytics handlers: read-only reports over the maintained counters.

use axum::extract::State;
use chrono_tz::Tz;

use super::model::{Interval, SummaryOut, SummaryQuery, TopProductOut, TopProductsQuery};
use super::range::Range;
use super::store;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Query};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::StoreId;
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The store's zone (an unknown name, which the tenants area never stores, reads as UTC)
/// and currency.
async fn zone(st: &AppState, store: StoreId) -> Result<(Tz, String, String), AppError> {
    let (name, currency) = st
        .db
        .read(move |c| store::zone(c, store))
        .await?
        .ok_or_else(|| AppError::not_found("store"))?;
    let tz = name.parse::<Tz>().unwrap_or(Tz::UTC);
    Ok((tz, name, currency))
}

fn interval(v: Option<&str>) -> Result<Interval, AppError> {
    match v.unwrap_or("day") {
        "day" => Ok(Interval::Day),
        "week" => Ok(Interval::Week),
        "month" => Ok(Interval::Month),
        _ => Err(AppError::field("interval", "must be day, week or month")),
    }
}

/// Orders, revenue, refunds, average order and new customers over store-local days
/// (`from`..=`to`, at most 366), in total and per day, ISO week or month.
#[utoipa::path(get, path = "/stores/{store_id}/analytics/summary", tag = "analytics",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), SummaryQuery),
    responses((status = 200, body = SummaryOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn get_summary(
    State(st): State<AppState>,
    scope: StoreScope,
    Query(q): Query<SummaryQuery>,
) -> Result<Json<SummaryOut>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let store = scope.store_id;
    let interval = interval(q.interval.as_deref())?;
    let (tz, timezone, currency) = zone(&st, store).await?;
    let range = Range::parse(q.from.as_deref(), q.to.as_deref(), tz, st.clock.now())?;
    let (start, end) = range.instants();
    let buckets = st
        .db
        .read(move |c| store::buckets(c, store, start, end))
        .await?;
    let (totals, series) = range.summarize(interval, &buckets);
    Ok(Json(SummaryOut {
        from: range.from.to_string(),
        to: range.to.to_string(),
        interval,
        currency,
        timezone,
        totals,
        series,
    }))
}

/// The products sold over store-local days `from`..=`to` (at most 366), by line revenue,
/// highest first (ties by product id).
#[utoipa::path(get, path = "/stores/{store_id}/analytics/top-products", tag = "analytics",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), PageQuery, TopProductsQuery),
    responses((status = 200, body = Page<TopProductOut>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn list_top_products(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, q): Paged<TopProductsQuery>,
) -> Result<Json<Page<TopProductOut>>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let store = scope.store_id;
    let (tz, _, _) = zone(&st, store).await?;
    let range = Range::parse(q.from.as_deref(), q.to.as_deref(), tz, st.clock.now())?;
    let instants = range.instants();
    // A cursor belongs to one store and range: another range's ranking is another list.
    let scope_key = format!("top-products:{store}:{}:{}", range.from, range.to);
    let after = page.position::<(i64, String)>(&scope_key)?;
    let (fetch, offset, with_total) = (page.fetch_limit(), page.offset(), page.include_total);
    let (rows, total) = st
        .db
        .read(move |c| {
            let rows = store::top_products(c, store, instants, after.as_ref(), fetch, offset)?;
            let total = if with_total {
                Some(store::count_products(c, store, instants)?)
            } else {
                None
            };
            Ok((rows, total))
        })
        .await?;
    let position = |p: &TopProductOut| (p.revenue_cents, p.product_id.to_string());
    Ok(Json(
        Page::from_rows(rows, &page, &scope_key, position, |p| p).with_total(total),
    ))
}
