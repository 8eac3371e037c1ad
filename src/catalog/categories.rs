//! Category handlers: a tree per store (`parent_id`), never a loop.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{CategoryIn, CategoryOut, CategoryPatch};
use super::store;
use super::writes::check_slug;
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{CategoryId, StoreId};
use crate::state::AppState;
use crate::time;

type ErrorBody = crate::error::ErrorBody;

fn not_found() -> AppError {
    AppError::not_found("category")
}

/// Checks that `parent` is a category of the store and would not close a loop under `id`.
fn check_parent(
    c: &rusqlite::Connection,
    store: StoreId,
    id: CategoryId,
    parent: Option<CategoryId>,
) -> Result<(), AppError> {
    let Some(parent) = parent else { return Ok(()) };
    if store::get_category(c, store, parent)?.is_none() {
        return Err(AppError::field(
            "parent_id",
            "is not a category of this store",
        ));
    }
    if store::would_cycle(c, id, parent)? {
        return Err(AppError::field(
            "parent_id",
            "would make the category its own ancestor",
        ));
    }
    Ok(())
}

/// The store's categories, by name.
#[utoipa::path(get, path = "/stores/{store_id}/categories", tag = "catalog", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<CategoryOut>), (status = 403, body = ErrorBody)))]
pub async fn list_categories(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<CategoryOut>>, AppError> {
    scope.require(Permission::ProductsRead)?;
    let store = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("categories:{store}"),
            move |c, after, limit, offset| store::list_categories(c, store, after, limit, offset),
            move |c| store::count_categories(c, store),
            |c| (c.name.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a category, optionally under a parent.
#[utoipa::path(post, path = "/stores/{store_id}/categories", tag = "catalog", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = CategoryIn,
    responses((status = 201, body = CategoryOut), (status = 409, body = ErrorBody, description = "`conflict`: the slug is taken"),
              (status = 422, body = ErrorBody)))]
pub async fn create_category(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<CategoryIn>,
) -> Result<(StatusCode, Json<CategoryOut>), AppError> {
    scope.require(Permission::CategoriesWrite)?;
    let name = text("name", &input.name, 1, 120)?;
    let slug = input.slug.as_deref().map(check_slug).transpose()?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let id = CategoryId::new();
            check_parent(tx, store, id, input.parent_id)?;
            let slug = match slug {
                Some(s) => s,
                None => store::free_slug(tx, "categories", store, &crate::text::slugify(&name))?,
            };
            let out = CategoryOut {
                id,
                store_id: store,
                parent_id: input.parent_id,
                name,
                slug,
                created_at: time::format(now),
                updated_at: time::format(now),
            };
            store::insert_category(tx, &out)?;
            audit::record(
                tx,
                &actor,
                "category.created",
                "category",
                &id.to_string(),
                now,
            )?;
            Ok(out)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One category.
#[utoipa::path(get, path = "/stores/{store_id}/categories/{category_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("category_id" = CategoryId, Path)),
    responses((status = 200, body = CategoryOut), (status = 404, body = ErrorBody)))]
pub async fn get_category(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CategoryId)>,
) -> Result<Json<CategoryOut>, AppError> {
    scope.require(Permission::ProductsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_category(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Renames or moves a category (`parent_id: null` moves it to the top).
#[utoipa::path(patch, path = "/stores/{store_id}/categories/{category_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("category_id" = CategoryId, Path)),
    request_body = CategoryPatch,
    responses((status = 200, body = CategoryOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the slug is taken"),
              (status = 422, body = ErrorBody)))]
pub async fn update_category(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CategoryId)>,
    Json(input): Json<CategoryPatch>,
) -> Result<Json<CategoryOut>, AppError> {
    scope.require(Permission::CategoriesWrite)?;
    let name = input
        .name
        .as_deref()
        .map(|n| text("name", n, 1, 120))
        .transpose()?;
    let slug = input.slug.as_deref().map(check_slug).transpose()?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let parent = input.parent_id;
    let out = st
        .db
        .write(move |tx| {
            store::get_category(tx, store, id)?.ok_or_else(not_found)?;
            if let Some(p) = parent {
                check_parent(tx, store, id, p)?;
            }
            store::update_category(tx, store, id, name.as_deref(), slug.as_deref(), parent, now)?;
            audit::record(
                tx,
                &actor,
                "category.updated",
                "category",
                &id.to_string(),
                now,
            )?;
            store::get_category(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a category; its children move to the top of the tree and its products lose it.
#[utoipa::path(delete, path = "/stores/{store_id}/categories/{category_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("category_id" = CategoryId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_category(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CategoryId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::CategoriesWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete_category(tx, store, id)? {
                return Err(not_found());
            }
            audit::record(
                tx,
                &actor,
                "category.deleted",
                "category",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
