//! Storefront pages' handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{PageFilter, PageIn, PageOut, PagePatch, PageStatus, PageVersionOut};
use super::store;
use super::writes::{self, Body, NewPage, PageChange};
use crate::audit::Actor;
use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, int32_param};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{PageId, StoreId};
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::webhooks::{self, Change};

type ErrorBody = crate::error::ErrorBody;

/// Publishes the page's event with its audit entry, in the write's transaction.
fn publish(
    tx: &crate::db::Tx<'_>,
    actor: &Actor,
    event: Event,
    action: &str,
    page: &PageOut,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    webhooks::publish_change(
        tx,
        actor,
        &Change {
            event,
            data: page,
            action,
            resource_id: &page.id.to_string(),
        },
        now,
    )
}

/// The store's pages, newest first; `status` filters.
#[utoipa::path(get, path = "/stores/{store_id}/pages", tag = "pages", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, PageFilter),
    responses((status = 200, body = Page<PageOut>), (status = 403, body = ErrorBody)))]
pub async fn list_pages(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<PageFilter>,
) -> Result<Json<Page<PageOut>>, AppError> {
    scope.require(Permission::CmsRead)?;
    let (store, status) = (scope.store_id, f.status);
    let key = format!(
        "pages:{store}:{}",
        status.map(PageStatus::as_str).unwrap_or_default()
    );
    let page = page
        .list(
            &st.db,
            &key,
            move |c, after, limit, offset| store::list(c, store, status, after, limit, offset),
            move |c| store::count(c, store, status),
            |p| (p.created_at.clone(), p.id.to_string()),
            |p| p,
        )
        .await?;
    Ok(Json(page))
}

/// Adds a page (a draft unless `status` says `published`). A `slug` given and taken is 409
/// `slug_taken`; omitted, it is derived from the title.
#[utoipa::path(post, path = "/stores/{store_id}/pages", tag = "pages", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = PageIn,
    responses((status = 201, body = PageOut), (status = 403, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`slug_taken`"), (status = 422, body = ErrorBody)))]
pub async fn create_page(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<PageIn>,
) -> Result<(StatusCode, Json<PageOut>), AppError> {
    scope.require(Permission::CmsWrite)?;
    let title = writes::check_title(&input.title)?;
    let slug = input.slug.as_deref().map(writes::check_slug).transpose()?;
    let seo = writes::check_seo(input.seo)?;
    let markdown = writes::check_body(&input.body_markdown)?;
    let new = NewPage {
        title,
        slug,
        body: run_blocking(move || Body::new(markdown)).await,
        status: input.status.unwrap_or(PageStatus::Draft),
        seo,
    };
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let page = writes::create(tx, store, new, now)?;
            publish(tx, &actor, Event::PagesCreated, "page.created", &page, now)?;
            Ok(page)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One page.
#[utoipa::path(get, path = "/stores/{store_id}/pages/{page_id}", tag = "pages",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("page_id" = PageId, Path)),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorBody)))]
pub async fn get_page(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PageId)>,
) -> Result<Json<PageOut>, AppError> {
    scope.require(Permission::CmsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(writes::not_found)
}

/// Changes any subset. A change to the slug, title, body or seo keeps the content it
/// replaces as a version (the last 20 are kept); `status: published` publishes the page
/// (`published_at` is set the first time), `draft` hides it from the storefront.
#[utoipa::path(patch, path = "/stores/{store_id}/pages/{page_id}", tag = "pages",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("page_id" = PageId, Path)),
    request_body = PagePatch,
    responses((status = 200, body = PageOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`slug_taken`"), (status = 422, body = ErrorBody)))]
pub async fn update_page(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PageId)>,
    Json(input): Json<PagePatch>,
) -> Result<Json<PageOut>, AppError> {
    scope.require(Permission::CmsWrite)?;
    let title = input
        .title
        .as_deref()
        .map(writes::check_title)
        .transpose()?;
    let slug = input.slug.as_deref().map(writes::check_slug).transpose()?;
    let seo = input.seo.map(writes::check_seo).transpose()?;
    let body = match input.body_markdown.as_deref().map(writes::check_body) {
        Some(markdown) => {
            let markdown = markdown?;
            Some(run_blocking(move || Body::new(markdown)).await)
        }
        None => None,
    };
    let change = PageChange {
        title,
        slug,
        body,
        status: input.status,
        seo,
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let page = writes::update(tx, store, id, change, now)?;
            publish(tx, &actor, Event::PagesUpdated, "page.updated", &page, now)?;
            Ok(page)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a page and its versions.
#[utoipa::path(delete, path = "/stores/{store_id}/pages/{page_id}", tag = "pages",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("page_id" = PageId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_page(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PageId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::CmsWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete(tx, store, id)? {
                return Err(writes::not_found());
            }
            webhooks::publish_change(
                tx,
                &actor,
                &Change {
                    event: Event::PagesDeleted,
                    data: &serde_json::json!({ "id": id }),
                    action: "page.deleted",
                    resource_id: &id.to_string(),
                },
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The page's kept earlier versions (the last 20), newest first.
#[utoipa::path(get, path = "/stores/{store_id}/pages/{page_id}/versions", tag = "pages",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("page_id" = PageId, Path), PageQuery),
    responses((status = 200, body = Page<PageVersionOut>), (status = 404, body = ErrorBody)))]
pub async fn list_page_versions(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PageId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<PageVersionOut>>, AppError> {
    scope.require(Permission::CmsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    // One 404 check first: versions are keyed by page only.
    if st
        .db
        .read(move |c| store::get(c, store, id))
        .await?
        .is_none()
    {
        return Err(writes::not_found());
    }
    let page = page
        .list(
            &st.db,
            &format!("page-versions:{store}:{id}"),
            move |c, after, limit, offset| store::list_versions(c, id, after, limit, offset),
            move |c| store::count_versions(c, id),
            store::version_position,
            |v| v,
        )
        .await?;
    Ok(Json(page))
}

/// Saves a kept version's content into the page as a new save (the replaced content is
/// kept as a version in turn); no body. 404 for a version the page does not keep.
#[utoipa::path(post, path = "/stores/{store_id}/pages/{page_id}/versions/{version}/restore",
    tag = "pages", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("page_id" = PageId, Path), ("version" = i32, Path)),
    responses((status = 200, body = PageOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`slug_taken`"),
              (status = 422, body = ErrorBody)))]
pub async fn restore_page_version(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PageId, String)>,
) -> Result<Json<PageOut>, AppError> {
    scope.require(Permission::CmsWrite)?;
    let version = int32_param("version", &ids.2)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    // The version's markdown is rendered before the write, so the writer never waits on it.
    let markdown = st
        .db
        .read(move |c| {
            store::get(c, store, id)?.ok_or_else(writes::not_found)?;
            store::get_version(c, id, version)
        })
        .await?
        .map(|v| v.body_markdown)
        .unwrap_or_default();
    let body = crate::threads::run_blocking(move || writes::Body::new(markdown)).await;
    let out = st
        .db
        .write(move |tx| {
            let before = store::get(tx, store, id)?.ok_or_else(writes::not_found)?;
            let page = writes::restore(tx, store, id, version, body, now)?;
            if page.version != before.version {
                publish(tx, &actor, Event::PagesUpdated, "page.restored", &page, now)?;
            }
            Ok(page)
        })
        .await?;
    Ok(Json(out))
}
