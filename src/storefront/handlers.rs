//! The storefront API's handlers: public, named by a chat channel's key in the path.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use rusqlite::Connection;

use super::model::{
    CartCustomerIn, CartItemIn, CartItemPatch, CheckoutIn, CheckoutOut, PlacedOrder, RecoverQuery,
    StorefrontCategory, StorefrontProduct, StorefrontProductFilter, StorefrontReview,
};
use super::store;
use crate::carts::model::{CartOut, CartWithToken};
use crate::carts::{recovery, store as carts, writes};
use crate::db::rendered::RenderedJson;
use crate::error::AppError;
use crate::http::extract::{Json, Path, Query, text};
use crate::http::page::{NoFilter, Page, PageQuery, Paged, RenderedPage};
use crate::http::trace::ClientAddr;
use crate::ids::{CartId, ProductId, StoreId, VariantId};
use crate::inbox::model::ChannelOut;
use crate::inbox::visitor::{chat_channel, origin};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The header a shopper sends the cart's token in.
pub const CART_TOKEN_HEADER: &str = "x-cart-token";

fn cart_token(h: &HeaderMap) -> Option<String> {
    h.get(CART_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The store a key opens, if this request may use it (404 unknown key; 403 a channel turned
/// off or a site it does not allow).
fn store_of(c: &Connection, key: &str, origin: Option<&str>) -> Result<StoreId, AppError> {
    chat_channel(c, key, origin).map(|ch: ChannelOut| ch.store_id)
}

/// The store's products on sale, newest first; `category_id` and `search` filter.
/// Availability is a yes or no per variant, never a count.
#[utoipa::path(get, path = "/storefront-api/{key}/products", tag = "storefront",
    params(("key" = String, Path, description = "The store's public key (its chat channel's)"),
           PageQuery, StorefrontProductFilter),
    responses((status = 200, body = Page<StorefrontProduct>), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is off or the origin is not allowed"),
              (status = 404, body = ErrorBody)))]
pub async fn list_products(
    State(st): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
    Paged(page, f): Paged<StorefrontProductFilter>,
) -> Result<RenderedPage, AppError> {
    let search = f.search.filter(|s| !s.trim().is_empty());
    let category = f.category_id;
    let origin = origin(&headers);
    // Cursors are bound to the key and the filters (the key names one store).
    let scope = format!("storefront-products:{key}:{category:?}:{search:?}");
    let (k2, o2, s2) = (key.clone(), origin.clone(), search.clone());
    page.list_rendered(
        &st.db,
        &scope,
        move |c, after, page, offset| {
            let store = store_of(c, &key, origin.as_deref())?;
            store::list_products(c, store, category, search.as_deref(), after, page, offset)
        },
        move |c| {
            let store = store_of(c, &k2, o2.as_deref())?;
            store::count_products(c, store, category, s2.as_deref())
        },
    )
    .await
}

/// One product on sale (a draft or archived one is 404).
#[utoipa::path(get, path = "/storefront-api/{key}/products/{product_id}", tag = "storefront",
    params(("key" = String, Path), ("product_id" = ProductId, Path)),
    responses((status = 200, body = StorefrontProduct), (status = 404, body = ErrorBody)))]
pub async fn get_product(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, ProductId)>,
    headers: HeaderMap,
) -> Result<RenderedJson, AppError> {
    let origin = origin(&headers);
    st.db
        .read(move |c| {
            let store = store_of(c, &key, origin.as_deref())?;
            store::get_rendered(c, store, id)
        })
        .await?
        .ok_or_else(|| AppError::not_found("product"))
}

/// A product's approved reviews, newest first (its rating is the product's
/// `rating_average` over `rating_count`).
#[utoipa::path(get, path = "/storefront-api/{key}/products/{product_id}/reviews", tag = "storefront",
    params(("key" = String, Path), ("product_id" = ProductId, Path), PageQuery),
    responses((status = 200, body = Page<StorefrontReview>), (status = 404, body = ErrorBody)))]
pub async fn list_reviews(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, ProductId)>,
    headers: HeaderMap,
    Paged(page, NoFilter {}): Paged,
) -> Result<Json<Page<StorefrontReview>>, AppError> {
    let origin = origin(&headers);
    let (k, o) = (key.clone(), origin.clone());
    let store = st
        .db
        .read(move |c| {
            let store = store_of(c, &k, o.as_deref())?;
            if !store::on_sale(c, store, id)? {
                return Err(AppError::not_found("product"));
            }
            Ok(store)
        })
        .await?;
    let page = page
        .list(
            &st.db,
            &format!("storefront-reviews:{store}:{id}"),
            move |c, after, limit, offset| store::list_reviews(c, store, id, after, limit, offset),
            move |c| store::count_reviews(c, store, id),
            |r| (r.created_at.clone(), r.id.to_string()),
            |r| r,
        )
        .await?;
    Ok(Json(page))
}

/// The store's categories, by name.
#[utoipa::path(get, path = "/storefront-api/{key}/categories", tag = "storefront",
    params(("key" = String, Path), PageQuery),
    responses((status = 200, body = Page<StorefrontCategory>), (status = 404, body = ErrorBody)))]
pub async fn list_categories(
    State(st): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
    Paged(page, NoFilter {}): Paged,
) -> Result<Json<Page<StorefrontCategory>>, AppError> {
    let origin = origin(&headers);
    let (k2, o2) = (key.clone(), origin.clone());
    let page = page
        .list(
            &st.db,
            &format!("storefront-categories:{key}"),
            move |c, after, limit, offset| {
                let store = store_of(c, &key, origin.as_deref())?;
                crate::catalog::store::list_categories(c, store, after, limit, offset)
            },
            move |c| {
                let store = store_of(c, &k2, o2.as_deref())?;
                crate::catalog::store::count_categories(c, store)
            },
            |c| (c.name.clone(), c.id.to_string()),
            StorefrontCategory::from,
        )
        .await?;
    Ok(Json(page))
}

/// Opens an empty cart. The answer carries the cart's `token`, shown only here: send it as
/// `X-Cart-Token` on every call about the cart.
#[utoipa::path(post, path = "/storefront-api/{key}/carts", tag = "storefront",
    params(("key" = String, Path)),
    responses((status = 201, body = CartWithToken), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is off or the origin is not allowed"),
              (status = 404, body = ErrorBody)))]
pub async fn create_cart(
    State(st): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (origin, now) = (origin(&headers), st.clock.now());
    let (cart, token) = st
        .db
        .write(move |tx| {
            let ch = chat_channel(tx, &key, origin.as_deref())?;
            writes::create(tx, ch.store_id, Some(ch.id), true, now)
        })
        .await?;
    let token =
        token.ok_or_else(|| AppError::internal(anyhow::anyhow!("a shopper's cart has a token")))?;
    // It carries the token: never kept for an idempotent replay, never cached.
    Ok(crate::http::idempotency::no_store((
        StatusCode::CREATED,
        Json(CartWithToken { cart, token }),
    )))
}

/// Runs `change` on the cart in one write, once the key and the cart's token check out. A
/// cart an assisted sale attached to a conversation tells the team and the widget
/// (`cart:updated`) once the write commits.
async fn change_cart<T: Send + 'static>(
    st: &AppState,
    key: String,
    id: CartId,
    headers: &HeaderMap,
    change: impl FnOnce(&crate::db::Tx<'_>, StoreId) -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    let (origin, token) = (origin(headers), cart_token(headers));
    let hub = st.hub.clone();
    st.db
        .write_publish(
            move |tx| {
                let store = store_of(tx, &key, origin.as_deref())?;
                writes::authorize(tx, store, id, token.as_deref())?;
                let out = change(tx, store)?;
                let frames = writes::frames_for(tx, store, id)?;
                Ok((out, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await
}

/// The cart (`X-Cart-Token`; a wrong token or another store's cart is 404).
#[utoipa::path(get, path = "/storefront-api/{key}/carts/{cart_id}", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path),
           ("X-Cart-Token" = String, Header, description = "The token the cart was created with")),
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody)))]
pub async fn get_cart(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, CartId)>,
    headers: HeaderMap,
) -> Result<Json<CartOut>, AppError> {
    let (origin, token) = (origin(&headers), cart_token(&headers));
    let cart = st
        .db
        .read(move |c| {
            let store = store_of(c, &key, origin.as_deref())?;
            writes::authorize(c, store, id, token.as_deref())?;
            carts::get(c, store, id)?.ok_or_else(writes::not_found)
        })
        .await?;
    Ok(Json(cart))
}

/// Adds units of a variant (to its line, if the cart has one). 422 for a variant that is not
/// the store's or not on sale; 409 `insufficient_stock` past what is available (the details
/// name the variant and the quantity asked for, never the stock).
#[utoipa::path(post, path = "/storefront-api/{key}/carts/{cart_id}/items", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), ("X-Cart-Token" = String, Header)),
    request_body = CartItemIn,
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict` (checked out) or `insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn add_item(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, CartId)>,
    headers: HeaderMap,
    Json(input): Json<CartItemIn>,
) -> Result<Json<CartOut>, AppError> {
    let now = st.clock.now();
    let cart = change_cart(&st, key, id, &headers, move |tx, store| {
        writes::add_item(tx, store, id, input.variant_id, input.quantity, now)
    })
    .await?;
    Ok(Json(cart))
}

/// Sets a line's quantity (the same checks as adding).
#[utoipa::path(patch, path = "/storefront-api/{key}/carts/{cart_id}/items/{variant_id}", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), ("variant_id" = VariantId, Path),
           ("X-Cart-Token" = String, Header)),
    request_body = CartItemPatch,
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict` (checked out) or `insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn update_item(
    State(st): State<AppState>,
    Path((key, id, variant)): Path<(String, CartId, VariantId)>,
    headers: HeaderMap,
    Json(input): Json<CartItemPatch>,
) -> Result<Json<CartOut>, AppError> {
    let now = st.clock.now();
    let cart = change_cart(&st, key, id, &headers, move |tx, store| {
        writes::set_quantity(tx, store, id, variant, input.quantity, now)
    })
    .await?;
    Ok(Json(cart))
}

/// Removes a line.
#[utoipa::path(delete, path = "/storefront-api/{key}/carts/{cart_id}/items/{variant_id}", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), ("variant_id" = VariantId, Path),
           ("X-Cart-Token" = String, Header)),
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the cart was checked out")))]
pub async fn remove_item(
    State(st): State<AppState>,
    Path((key, id, variant)): Path<(String, CartId, VariantId)>,
    headers: HeaderMap,
) -> Result<Json<CartOut>, AppError> {
    let now = st.clock.now();
    let cart = change_cart(&st, key, id, &headers, move |tx, store| {
        writes::remove_item(tx, store, id, variant, now)
    })
    .await?;
    Ok(Json(cart))
}

/// Sets how to reach the shopper (an e-mail, a phone or both; the whole contact is
/// replaced). A checkout needs one; a cart with one and items that goes untouched is
/// followed up (`carts.abandoned`).
#[utoipa::path(put, path = "/storefront-api/{key}/carts/{cart_id}/customer", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), ("X-Cart-Token" = String, Header)),
    request_body = CartCustomerIn,
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the cart was checked out"), (status = 422, body = ErrorBody)))]
pub async fn set_customer(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, CartId)>,
    headers: HeaderMap,
    Json(input): Json<CartCustomerIn>,
) -> Result<Json<CartOut>, AppError> {
    let contact = writes::contact(input.email.as_deref(), input.phone.as_deref())?;
    let now = st.clock.now();
    let cart = change_cart(&st, key, id, &headers, move |tx, store| {
        writes::set_contact(tx, store, id, &contact, now)
    })
    .await?;
    Ok(Json(cart))
}

/// Places the cart's order, as the admin's create-order does (priced from the variants,
/// stock reserved, `orders.created`; source `storefront`); payment is marked later by the
/// store or its payment provider. The cart becomes `converted` (`recovered` after it was
/// abandoned, with `carts.recovered`). 422 for an empty cart, one without a contact or with
/// a product no longer on sale; 409 `insufficient_stock` when a line cannot be reserved (the
/// cart stays open) or `conflict` for a cart already checked out.
#[utoipa::path(post, path = "/storefront-api/{key}/carts/{cart_id}/checkout", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), ("X-Cart-Token" = String, Header)),
    request_body(content = Option<CheckoutIn>),
    responses((status = 201, body = CheckoutOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict` (checked out) or `insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn checkout(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    Path((key, id)): Path<(String, CartId)>,
    headers: HeaderMap,
    input: Option<Json<CheckoutIn>>,
) -> Result<(StatusCode, Json<CheckoutOut>), AppError> {
    if let Some(wait) = st.limits.check_checkout(addr).retry_after_secs {
        return Err(AppError::rate_limited(wait));
    }
    let note = input
        .and_then(|Json(i)| i.note)
        .map(|n| text("note", &n, 0, 5000))
        .transpose()?;
    let (now, plans) = (st.clock.now(), st.cfg.plans.clone());
    let done = change_cart(&st, key, id, &headers, move |tx, store| {
        writes::checkout(tx, &plans, store, id, note, now)
    })
    .await?;
    let o = done.order;
    Ok((
        StatusCode::CREATED,
        Json(CheckoutOut {
            order: PlacedOrder {
                id: o.id,
                number: o.number,
                status: o.status.as_str().to_owned(),
                subtotal_cents: o.subtotal_cents,
                total_cents: o.total_cents,
                currency: o.currency,
            },
            cart: done.cart,
        }),
    ))
}

/// Opens a cart from the signed link in `carts.abandoned` (`recovery_url`): answers the cart
/// with a new `token` (the old one stops working). A link that is not ours, for another cart
/// or past its end is 404.
#[utoipa::path(get, path = "/storefront-api/{key}/carts/{cart_id}/recover", tag = "storefront",
    params(("key" = String, Path), ("cart_id" = CartId, Path), RecoverQuery),
    responses((status = 200, body = CartWithToken), (status = 404, body = ErrorBody)))]
pub async fn recover_cart(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, CartId)>,
    headers: HeaderMap,
    Query(q): Query<RecoverQuery>,
) -> Result<Response, AppError> {
    let now = st.clock.now();
    if !recovery::link_is_valid(&st.hmac_key, id, q.expires, &q.signature, now) {
        return Err(writes::not_found());
    }
    let origin = origin(&headers);
    let (cart, token) = st
        .db
        .write(move |tx| {
            let store = store_of(tx, &key, origin.as_deref())?;
            carts::head(tx, store, id)?.ok_or_else(writes::not_found)?;
            let token = writes::new_token(tx, store, id)?;
            let cart = carts::get(tx, store, id)?.ok_or_else(writes::not_found)?;
            Ok((cart, token))
        })
        .await?;
    Ok(crate::http::idempotency::no_store(Json(CartWithToken {
        cart,
        token,
    })))
}
