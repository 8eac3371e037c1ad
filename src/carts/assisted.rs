//! Assisted sales (issue 19, phase B; spec 6.2–6.3 `cart:updated`, 7 `no_cart`): the team
//! builds a cart for a conversation's contact from the inbox, and sends its checkout link as
//! a message.
//!
//! A conversation has at most one cart attached (`carts.conversation_id`; the single writer
//! checks it in the transaction that attaches). Every change publishes `cart:updated` to the
//! store's team sockets and to the conversation's widget after it commits; the cart in it is
//! [`CartOut`], which never holds a token, for both. The shopper opens the cart through the
//! link the team sends: the recovery link ([`recovery::link`]), which hands out a fresh token.

use crate::db::Tx;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

use super::model::{
    CartCustomer, CartLineIn, CartLinesIn, CartLinkIn, CartOut, ConversationCartIn,
};
use super::{recovery, store, writes};
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::ids::{CartId, ChannelId, ConversationId, StoreId};
use crate::inbox::hub::Frame;
use crate::inbox::model::{ChannelKind, ConversationOut, Sent};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// 404 `no_cart`: the conversation exists but has no cart attached.
pub fn no_cart() -> AppError {
    AppError::new(ErrorCode::NoCart, "this conversation has no cart")
}

/// Reads need both areas' read permissions; changes both areas' write permissions.
fn require(scope: &StoreScope, write: bool) -> Result<(), AppError> {
    if write {
        scope.require(Permission::ConversationsWrite)?;
        scope.require(Permission::OrdersWrite)
    } else {
        scope.require(Permission::ConversationsRead)?;
        scope.require(Permission::OrdersRead)
    }
}

fn conversation(
    c: &Connection,
    store: StoreId,
    id: ConversationId,
) -> Result<ConversationOut, AppError> {
    crate::inbox::store::get_conversation(c, store, id)?
        .ok_or_else(|| AppError::not_found("conversation"))
}

/// The conversation's cart id: 404 for another store's conversation, `no_cart` without one.
fn attached(c: &Connection, store: StoreId, conv: ConversationId) -> Result<CartId, AppError> {
    conversation(c, store, conv)?;
    store::attached(c, store, conv)?.ok_or_else(no_cart)
}

/// The chat channel the cart's links name: the conversation's when it is a chat, else the
/// store's first enabled one (a messaging-app or e-mail conversation still gets a link).
fn link_channel(
    c: &Connection,
    store: StoreId,
    conv: &ConversationOut,
) -> Result<Option<ChannelId>, AppError> {
    if conv.channel_kind == ChannelKind::StorefrontChat {
        return Ok(Some(conv.channel_id));
    }
    Ok(
        crate::inbox::store::first_enabled_channel(c, store, ChannelKind::StorefrontChat)?
            .map(|ch| ch.id),
    )
}

/// The conversation's contact as a cart keeps it; a value the cart rules refuse is left out
/// rather than failing the team's request over the contact's typing.
fn contact_of(conv: &ConversationOut) -> CartCustomer {
    let one = |email: Option<&str>, phone: Option<&str>| {
        writes::contact(email, phone).unwrap_or_default()
    };
    CartCustomer {
        email: one(conv.contact.email.as_deref(), None).email,
        phone: one(None, conv.contact.phone.as_deref()).phone,
    }
}

/// Attaches `cart_id` (an open cart of the store, attached nowhere else) or a new team cart
/// to the conversation; true when it attached one, false when one was attached already.
fn attach_in(
    tx: &Tx<'_>,
    actor: &Actor,
    store: StoreId,
    conv: ConversationId,
    cart_id: Option<CartId>,
    now: DateTime<Utc>,
) -> Result<(CartOut, bool), AppError> {
    let c = conversation(tx, store, conv)?;
    if let Some(existing) = store::attached(tx, store, conv)? {
        if cart_id.is_some_and(|id| id != existing) {
            return Err(AppError::conflict(
                ErrorCode::Conflict,
                "this conversation has a cart already; detach it first",
            ));
        }
        let cart = store::get(tx, store, existing)?.ok_or_else(writes::not_found)?;
        return Ok((cart, false));
    }
    let channel = link_channel(tx, store, &c)?;
    let contact = contact_of(&c);
    let id = match cart_id {
        Some(id) => {
            let head = store::head(tx, store, id)?.ok_or_else(writes::not_found)?;
            if !head.status.is_editable() {
                return Err(writes::checked_out());
            }
            if head.conversation.is_some() {
                return Err(AppError::conflict(
                    ErrorCode::Conflict,
                    "this cart is attached to another conversation",
                ));
            }
            if let Some(ch) = channel {
                store::set_channel(tx, store, id, ch)?;
            }
            let cart = store::get(tx, store, id)?.ok_or_else(writes::not_found)?;
            if cart.customer.email.is_none() && cart.customer.phone.is_none() {
                writes::set_contact(tx, store, id, &contact, now)?;
            }
            id
        }
        None => {
            let (cart, _) = writes::create(tx, store, channel, false, now)?;
            if contact.email.is_some() || contact.phone.is_some() {
                writes::set_contact(tx, store, cart.id, &contact, now)?;
            }
            cart.id
        }
    };
    store::attach(tx, store, id, Some(conv))?;
    audit::record(tx, actor, "cart.attached", "cart", &id.to_string(), now)?;
    let cart = store::get(tx, store, id)?.ok_or_else(writes::not_found)?;
    Ok((cart, true))
}

/// The conversation's cart (lines at current prices); 404 `no_cart` when it has none.
/// Needs `conversations.read` and `orders.read`.
#[utoipa::path(get, path = "/stores/{store_id}/conversations/{conversation_id}/cart",
    tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    responses((status = 200, body = CartOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody, description = "`not_found` (conversation) or `no_cart`")))]
pub async fn get_conversation_cart(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
) -> Result<Json<CartOut>, AppError> {
    require(&scope, false)?;
    let (store, conv) = (scope.store_id, ids.1);
    let cart = st
        .db
        .read(move |c| {
            let id = attached(c, store, conv)?;
            store::get(c, store, id)?.ok_or_else(no_cart)
        })
        .await?;
    Ok(Json(cart))
}

/// Opens a cart for the conversation's contact (their e-mail and phone, when the
/// conversation has them), or attaches `cart_id`, an open cart of this store attached to no
/// other conversation (409 otherwise; another store's is 404). 201 when a cart was attached;
/// 200 with the cart when the conversation had one already. Publishes `cart:updated`.
/// Needs `conversations.write` and `orders.write`.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/cart",
    tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body(content = Option<ConversationCartIn>),
    responses((status = 201, body = CartOut, description = "a cart was attached"),
              (status = 200, body = CartOut, description = "the cart attached already"),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn attach_cart(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    input: Option<Json<ConversationCartIn>>,
) -> Result<(StatusCode, Json<CartOut>), AppError> {
    require(&scope, true)?;
    let cart_id = input.and_then(|Json(i)| i.cart_id);
    let (store, conv, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let hub = st.hub.clone();
    let (cart, made) = st
        .db
        .write_publish(
            move |tx| {
                let (cart, made) = attach_in(tx, &actor, store, conv, cart_id, now)?;
                let frames: Vec<Frame> = if made {
                    writes::cart_updated(store, conv, Some(&cart)).into()
                } else {
                    Vec::new()
                };
                Ok(((cart, made), frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    let status = if made {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(cart)))
}

/// Sets the cart's whole list of lines, in order (an empty list empties it). The storefront's
/// rules: 422 for a variant that is not the store's or not on sale, or a quantity outside 1 to
/// 10000 (`details.fields` names `items[i]`); 409 `insufficient_stock` past what is available;
/// 409 `conflict` once the cart was checked out. Nothing changes unless every line passes.
/// Publishes `cart:updated`. Needs `conversations.write` and `orders.write`.
#[utoipa::path(put, path = "/stores/{store_id}/conversations/{conversation_id}/cart/items",
    tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body = CartLinesIn,
    responses((status = 200, body = CartOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody, description = "`not_found` (conversation) or `no_cart`"),
              (status = 409, body = ErrorBody, description = "`conflict` (checked out) or `insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn set_cart_items(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    Json(input): Json<CartLinesIn>,
) -> Result<Json<CartOut>, AppError> {
    require(&scope, true)?;
    let items: Vec<_> = input
        .items
        .iter()
        .map(
            |&CartLineIn {
                 variant_id,
                 quantity,
             }| (variant_id, quantity),
        )
        .collect();
    let (store, conv, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let hub = st.hub.clone();
    let cart = st
        .db
        .write_publish(
            move |tx| {
                let id = attached(tx, store, conv)?;
                let cart = writes::set_items(tx, store, id, &items, now)?;
                audit::record(tx, &actor, "cart.updated", "cart", &id.to_string(), now)?;
                let frames = writes::cart_updated(store, conv, Some(&cart));
                Ok((cart, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    Ok(Json(cart))
}

/// Detaches the conversation's cart (the cart itself stays, as any cart of the store); 204
/// also when none was attached. Publishes `cart:updated` with a null cart when one was.
/// Needs `conversations.write` and `orders.write`.
#[utoipa::path(delete, path = "/stores/{store_id}/conversations/{conversation_id}/cart",
    tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn detach_cart(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
) -> Result<StatusCode, AppError> {
    require(&scope, true)?;
    let (store, conv, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let hub = st.hub.clone();
    st.db
        .write_publish(
            move |tx| {
                conversation(tx, store, conv)?;
                let Some(id) = store::attached(tx, store, conv)? else {
                    return Ok(((), Vec::new()));
                };
                store::attach(tx, store, id, None)?;
                audit::record(tx, &actor, "cart.detached", "cart", &id.to_string(), now)?;
                Ok(((), writes::cart_updated(store, conv, None).into()))
            },
            move |frames: Vec<Frame>| hub.publish(&frames),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sends the cart's checkout link as the caller's message in the conversation: `text` (a
/// short default without it), then a signed storefront link that opens the cart with a fresh
/// token (`GET /storefront-api/{key}/carts/{cart_id}/recover?...`, valid 14 days). It goes out
/// as any team reply does (the widget, the messaging app, e-mail), with the same 422s. 409
/// when the cart was checked out or the store has no chat channel to open it on.
/// Needs `conversations.write` and `orders.write`.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/cart/send",
    tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body(content = Option<CartLinkIn>),
    responses((status = 201, body = Sent), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody, description = "`not_found` (conversation) or `no_cart`"),
              (status = 409, body = ErrorBody, description = "`conflict`"), (status = 422, body = ErrorBody)))]
pub async fn send_cart_link(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    input: Option<Json<CartLinkIn>>,
) -> Result<(StatusCode, Json<Sent>), AppError> {
    require(&scope, true)?;
    let text = input
        .and_then(|Json(i)| i.text)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "Your cart is ready: check out here.".to_owned());
    let (store, conv) = (scope.store_id, ids.1);
    let (id, key) = st
        .db
        .read(move |c| {
            let id = attached(c, store, conv)?;
            let head = store::head(c, store, id)?.ok_or_else(no_cart)?;
            if !head.status.is_editable() {
                return Err(writes::checked_out());
            }
            let key = match head.channel {
                Some(ch) => store::channel_key(c, ch)?,
                None => None,
            };
            let key = match key {
                Some(k) => Some(k),
                None => link_channel(c, store, &conversation(c, store, conv)?)?
                    .map(|ch| store::channel_key(c, ch))
                    .transpose()?
                    .flatten(),
            };
            let key = key.ok_or_else(|| {
                AppError::conflict(
                    ErrorCode::Conflict,
                    "the store has no chat channel whose key could open the cart",
                )
            })?;
            Ok((id, key))
        })
        .await?;
    let until = st.clock.now() + recovery::LINK_VALID;
    let link = recovery::link(&st.hmac_key, st.public_url(), &key, id, until);
    let sent = crate::inbox::writes::send_agent_text(
        &st,
        &Actor::of(&scope),
        store,
        conv,
        format!("{text}\n{link}"),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(sent)))
}
