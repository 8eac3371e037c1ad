//! The storefront's pages: the store's published pages (the pages area's), by slug.

use axum::extract::State;
use axum::http::HeaderMap;

use crate::error::AppError;
use crate::http::extract::{Json, Path};
use crate::http::page::{NoFilter, Page, PageQuery, Paged};
use crate::inbox::visitor::{chat_channel, origin};
use crate::pages::model::{PageStatus, StorefrontPage};
use crate::pages::store as pages;
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The store's published pages, newest first (drafts never show).
#[utoipa::path(get, path = "/storefront-api/{key}/pages", tag = "storefront",
    params(("key" = String, Path, description = "The store's public key (its chat channel's)"),
           PageQuery),
    responses((status = 200, body = Page<StorefrontPage>), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is off or the origin is not allowed"),
              (status = 404, body = ErrorBody)))]
pub async fn list_pages(
    State(st): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
    Paged(page, NoFilter {}): Paged,
) -> Result<Json<Page<StorefrontPage>>, AppError> {
    let origin = origin(&headers);
    let (k, o) = (key.clone(), origin.clone());
    let store = st
        .db
        .read(move |c| chat_channel(c, &k, o.as_deref()).map(|ch| ch.store_id))
        .await?;
    let published = Some(PageStatus::Published);
    let page = page
        .list(
            &st.db,
            &format!("storefront-pages:{store}"),
            move |c, after, limit, offset| pages::list(c, store, published, after, limit, offset),
            move |c| pages::count(c, store, published),
            |p| (p.created_at.clone(), p.id.to_string()),
            StorefrontPage::from,
        )
        .await?;
    Ok(Json(page))
}

/// One published page by its slug (a draft, or an unknown slug, is 404).
#[utoipa::path(get, path = "/storefront-api/{key}/pages/{slug}", tag = "storefront",
    params(("key" = String, Path), ("slug" = String, Path)),
    responses((status = 200, body = StorefrontPage), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is off or the origin is not allowed"),
              (status = 404, body = ErrorBody)))]
pub async fn get_page(
    State(st): State<AppState>,
    Path((key, slug)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<StorefrontPage>, AppError> {
    let origin = origin(&headers);
    st.db
        .read(move |c| {
            let store = chat_channel(c, &key, origin.as_deref())?.store_id;
            pages::get_published(c, store, &slug)
        })
        .await?
        .map(|p| Json(p.into()))
        .ok_or_else(|| AppError::not_found("page"))
}
