//! Carts: where a shopper's intent lives, and its recovery (issue 19; spec 6.1
//! `carts.abandoned`, `carts.recovered`; 9.1 the storefront).
//!
//! Invariants:
//! - A shopper's cart answers only to its token (`X-Cart-Token`): only the token's sha256 is
//!   stored, compared in constant time; an unknown cart, another store's, or a wrong token
//!   are all 404 ([`writes::authorize`]).
//! - A cart holds at most 100 lines of 1 to 10,000 units, each of a variant of its store
//!   whose product is `active` (422), never more than is free to sell when added (409
//!   `insufficient_stock`, without the count). Prices are the catalog's until checkout.
//! - Checkout creates the order through the orders area's own create (`orders::writes::
//!   create_in`, source `storefront`), and closes the cart, in one transaction: stock is
//!   reserved, `orders.created` fires, the cart becomes `converted` (or `recovered` after
//!   abandonment, with `carts.recovered`). A checked-out cart no longer changes (409).
//! - The recovery job ([`recovery`]) marks `abandoned` the open carts with a contact and
//!   items untouched for `--cart-abandon-after-minutes`; the conditional UPDATE and its
//!   `carts.abandoned` share a transaction, so each fires once per cart. Its
//!   `recovery_url` is signed with the server's HMAC key and ends after 14 days.
//! - Cart changes live in [`writes`], each inside the caller's transaction: the storefront's
//!   routes and the inbox's assisted sale ([`assisted`]) call the same rules.
//! - Assisted sales (spec 6.2–6.3 `cart:updated`, 7 `no_cart`): a conversation has at most
//!   one cart attached; reading it needs `conversations.read` and `orders.read`, changing it
//!   `conversations.write` and `orders.write`. Every change to an attached cart (the team's,
//!   or the shopper's on the storefront) publishes `cart:updated` to the team and the
//!   conversation's widget after it commits, never with a token. The checkout link the team
//!   sends is the signed recovery link, posted through the inbox's own reply path.

pub mod assisted;
pub mod handlers;
pub mod model;
pub mod recovery;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The admin routes (`/stores/{store_id}/carts...` and a conversation's `.../cart`).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_carts))
        .routes(routes!(handlers::get_cart))
        .routes(routes!(
            assisted::get_conversation_cart,
            assisted::attach_cart,
            assisted::detach_cart
        ))
        .routes(routes!(assisted::set_cart_items))
        .routes(routes!(assisted::send_cart_link))
}
