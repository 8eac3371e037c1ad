//! Review handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{ReviewFilter, ReviewIn, ReviewOut, ReviewPatch, ReviewStatus};
use super::{store, writes};
use crate::audit::{self, Actor};
use crate::db::rendered::RenderedJson;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged, RenderedPage};
use crate::http::permissions::Permission;
use crate::ids::{ReviewId, StoreId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

fn not_found() -> AppError {
    AppError::not_found("review")
}

/// The store's reviews, newest first; filters `status` and `product_id`. The pending badge
/// is `status=pending&limit=1&include_total=true`.
#[utoipa::path(get, path = "/stores/{store_id}/reviews", tag = "reviews", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, ReviewFilter),
    responses((status = 200, body = Page<ReviewOut>), (status = 403, body = ErrorBody)))]
pub async fn list_reviews(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<ReviewFilter>,
) -> Result<RenderedPage, AppError> {
    scope.require(Permission::ReviewsRead)?;
    let store = scope.store_id;
    let (status, product) = (f.status, f.product_id);
    let key = format!(
        "reviews:{store}:{}:{}",
        status.map_or("", ReviewStatus::as_str),
        product.map(|p| p.to_string()).unwrap_or_default()
    );
    let page = page
        .list_rendered(
            &st.db,
            &key,
            move |c, after, page, offset| {
                store::list(c, store, status, product, after, page, offset)
            },
            move |c| store::count(c, store, status, product),
        )
        .await?;
    Ok(page)
}

/// Imports a review (from another platform, say). `is_verified_purchase` is derived from
/// `order_id`: true when that order of the store bought the product and was paid.
#[utoipa::path(post, path = "/stores/{store_id}/reviews", tag = "reviews", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = ReviewIn,
    responses((status = 201, body = ReviewOut), (status = 422, body = ErrorBody)))]
pub async fn import_review(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<ReviewIn>,
) -> Result<(StatusCode, Json<ReviewOut>), AppError> {
    scope.require(Permission::ReviewsWrite)?;
    if !(1..=5).contains(&input.rating) {
        return Err(AppError::field("rating", "must be 1 to 5"));
    }
    let author_name = text("author_name", &input.author_name, 1, 255)?;
    let author_email = crate::text::normalize_email(&input.author_email);
    if !crate::text::looks_like_email(&author_email) {
        return Err(AppError::field("author_email", "is not an e-mail address"));
    }
    let title = text("title", &input.title, 0, 255)?;
    let body = text("body", &input.body, 0, 10_000)?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let Some((product_slug, product_title)) = store::product(tx, store, input.product_id)?
            else {
                return Err(AppError::field(
                    "product_id",
                    "is not a product of this store",
                ));
            };
            if let Some(c) = input.customer_id
                && !crate::customers::store::exists(tx, store, c)?
            {
                return Err(AppError::field(
                    "customer_id",
                    "is not a customer of this store",
                ));
            }
            let (mut customer_id, mut verified) = (input.customer_id, false);
            if let Some(order) = input.order_id {
                let Some((buyer, bought)) = store::purchase(tx, store, order, input.product_id)?
                else {
                    return Err(AppError::field("order_id", "is not an order of this store"));
                };
                // Verified only when the order is the reviewer's (when a reviewer is named).
                verified = bought && (customer_id.is_none() || customer_id == buyer);
                customer_id = customer_id.or(buyer);
            }
            let at = crate::time::format(now);
            let r = ReviewOut {
                id: ReviewId::new(),
                store_id: store,
                product_id: input.product_id,
                customer_id,
                order_id: input.order_id,
                author_name,
                author_email,
                title,
                body,
                rating: input.rating,
                status: input.status.unwrap_or(ReviewStatus::Pending),
                is_verified_purchase: verified,
                created_at: at.clone(),
                updated_at: at,
                product_slug,
                product_title,
                reply: None,
                replied_at: None,
            };
            store::insert(tx, &r)?;
            audit::record(
                tx,
                &actor,
                "review.created",
                "review",
                &r.id.to_string(),
                now,
            )?;
            Ok(r)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One review.
#[utoipa::path(get, path = "/stores/{store_id}/reviews/{review_id}", tag = "reviews",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("review_id" = ReviewId, Path)),
    responses((status = 200, body = ReviewOut), (status = 404, body = ErrorBody)))]
pub async fn get_review(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ReviewId)>,
) -> Result<RenderedJson, AppError> {
    scope.require(Permission::ReviewsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_rendered(c, store, id))
        .await?
        .ok_or_else(not_found)
}

/// Moderates a review (`status` is required; approving or rejecting updates the product's
/// rating, which counts approved reviews only) and sets the store's public `reply` (at most
/// 2,000 characters; `""` or null removes it, leaving it out keeps it).
#[utoipa::path(patch, path = "/stores/{store_id}/reviews/{review_id}", tag = "reviews",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("review_id" = ReviewId, Path)),
    request_body = ReviewPatch,
    responses((status = 200, body = ReviewOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_review(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ReviewId)>,
    Json(input): Json<ReviewPatch>,
) -> Result<Json<ReviewOut>, AppError> {
    scope.require(Permission::ReviewsWrite)?;
    let review =
        writes::update_review(&st, &Actor::of(&scope), scope.store_id, ids.1, input).await?;
    Ok(Json(review))
}
