//! Cart changes, each inside the caller's transaction, so any route can make them: the
//! storefront's (the shopper, holding the cart's token) and the inbox's (the team, in an
//! assisted sale). Access is the caller's to check first ([`authorize`] for a shopper).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

use super::model::{CartCustomer, CartOut, CartRecovered, CartStatus, CartUpdated};
use super::store::{self, Head, NewCart};
use crate::audit::Actor;
use crate::billing::plans::Catalog;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::ids::{CartId, ChannelId, ConversationId, CustomerId, StoreId, VariantId};
use crate::inbox::hub::Frame;
use crate::orders::model::{OrderIn, OrderItemIn, OrderOut};
use crate::orders::writes::Origin;
use crate::webhooks;

/// Lines in one cart, as in one order.
pub const MAX_LINES: usize = 100;
/// Units of one line, as in an order's.
pub const MAX_QUANTITY: i64 = 10_000;

pub fn not_found() -> AppError {
    AppError::not_found("cart")
}

/// Opens an empty cart in `store`, on the chat channel a shopper reached it by. With
/// `shopper`, a token is made for them (returned once, its hash stored); without, the cart
/// is the team's (an assisted sale in the inbox).
pub fn create(
    tx: &Tx<'_>,
    store: StoreId,
    channel: Option<ChannelId>,
    shopper: bool,
    now: DateTime<Utc>,
) -> Result<(CartOut, Option<String>), AppError> {
    let token = shopper.then(|| crate::secrets::new_token("ct_"));
    let hash = token.as_deref().map(crate::secrets::hash);
    let currency = crate::orders::store::currency(tx, store)?;
    let id = CartId::new();
    store::insert(
        tx,
        &NewCart {
            id,
            store,
            channel,
            token_hash: hash.as_deref(),
            currency: &currency,
        },
        now,
    )?;
    let cart = store::get(tx, store, id)?.ok_or_else(not_found)?;
    Ok((cart, token))
}

/// The cart, if `token` is its shopper's: an unknown cart, another store's, a team cart or
/// a wrong token are all 404 (compared in constant time), so a cart id alone reveals nothing.
pub fn authorize(
    c: &Connection,
    store: StoreId,
    id: CartId,
    token: Option<&str>,
) -> Result<Head, AppError> {
    let head = store::head(c, store, id)?.ok_or_else(not_found)?;
    let given = token.map(crate::secrets::hash).unwrap_or_default();
    match &head.token_hash {
        Some(h) if crate::secrets::same(h, &given) => Ok(head),
        _ => Err(not_found()),
    }
}

/// A token for the cart in place of the old one (a recovery link was opened).
pub fn new_token(tx: &Tx<'_>, store: StoreId, id: CartId) -> Result<String, AppError> {
    let token = crate::secrets::new_token("ct_");
    store::set_token_hash(tx, store, id, &crate::secrets::hash(&token))?;
    Ok(token)
}

fn editable(tx: &Connection, store: StoreId, id: CartId) -> Result<(), AppError> {
    let head = store::head(tx, store, id)?.ok_or_else(not_found)?;
    if head.status.is_editable() {
        Ok(())
    } else {
        Err(checked_out())
    }
}

/// 409 for a change to a cart that became an order.
pub fn checked_out() -> AppError {
    AppError::conflict(
        ErrorCode::Conflict,
        "this cart was checked out; open a new one",
    )
}

fn check_quantity(q: i64) -> Result<(), AppError> {
    if (1..=MAX_QUANTITY).contains(&q) {
        Ok(())
    } else {
        Err(AppError::field(
            "quantity",
            format!("must be 1 to {MAX_QUANTITY}"),
        ))
    }
}

/// 409 `insufficient_stock` for a shopper: which variant and how many were asked for,
/// never how many there are.
fn short(variant: VariantId, wanted: i64) -> AppError {
    AppError::conflict(
        ErrorCode::InsufficientStock,
        "not enough units of this variant are in stock",
    )
    .with_details(serde_json::json!({"variant_id": variant, "requested": wanted}))
}

/// The same error, without the stock counts the orders area reports to the team: what the
/// storefront may show a shopper.
pub fn shopper_safe(e: AppError) -> AppError {
    if e.code != ErrorCode::InsufficientStock {
        return e;
    }
    let d = e.details.unwrap_or_default();
    let variant = d.get("variant_id").and_then(|v| v.as_str()?.parse().ok());
    let wanted = d.get("requested").and_then(serde_json::Value::as_i64);
    match (variant, wanted) {
        (Some(v), Some(n)) => short(v, n),
        _ => AppError::conflict(
            ErrorCode::InsufficientStock,
            "not enough units are in stock",
        ),
    }
}

/// Whether a shopper may buy `quantity` of `variant` now: 422 when it is not a variant of
/// this store or its product is not on sale, 409 `insufficient_stock` past what is free.
fn sellable(
    c: &Connection,
    store: StoreId,
    variant: VariantId,
    quantity: i64,
) -> Result<(), AppError> {
    sellable_as(c, store, variant, quantity, "variant_id")
}

/// [`sellable`], naming the field a 422 is about.
fn sellable_as(
    c: &Connection,
    store: StoreId,
    variant: VariantId,
    quantity: i64,
    field: &str,
) -> Result<(), AppError> {
    match store::offer(c, store, variant)? {
        None => Err(AppError::field(field, "is not a variant of this store")),
        Some((false, _)) => Err(AppError::field(field, "is not on sale")),
        Some((true, free)) if free < quantity => Err(short(variant, quantity)),
        Some(_) => Ok(()),
    }
}

/// Adds `quantity` units of `variant` (to its line, if the cart has one).
pub fn add_item(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    variant: VariantId,
    quantity: i64,
    now: DateTime<Utc>,
) -> Result<CartOut, AppError> {
    check_quantity(quantity)?;
    editable(tx, store, id)?;
    let had = store::quantity(tx, id, variant)?;
    let total = had.unwrap_or(0) + quantity;
    if total > MAX_QUANTITY {
        return Err(AppError::field(
            "quantity",
            format!("a line holds at most {MAX_QUANTITY} units"),
        ));
    }
    if had.is_none() && lines(tx, store, id)? >= MAX_LINES {
        return Err(AppError::field(
            "variant_id",
            format!("a cart holds at most {MAX_LINES} lines"),
        ));
    }
    sellable(tx, store, variant, total)?;
    store::put_item(tx, id, variant, total)?;
    store::touch(tx, store, id, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// Replaces the cart's lines with `items`, in their order (the team's whole list in an
/// assisted sale; an empty list empties the cart). Each line is checked as an added one is
/// (422 naming `items[i]`; 409 `insufficient_stock`), a variant may appear once, and nothing
/// changes unless every line passes.
pub fn set_items(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    items: &[(VariantId, i64)],
    now: DateTime<Utc>,
) -> Result<CartOut, AppError> {
    editable(tx, store, id)?;
    if items.len() > MAX_LINES {
        return Err(AppError::field(
            "items",
            format!("a cart holds at most {MAX_LINES} lines"),
        ));
    }
    for (i, &(variant, quantity)) in items.iter().enumerate() {
        if !(1..=MAX_QUANTITY).contains(&quantity) {
            return Err(AppError::field(
                format!("items[{i}].quantity"),
                format!("must be 1 to {MAX_QUANTITY}"),
            ));
        }
        if items[..i].iter().any(|&(v, _)| v == variant) {
            return Err(AppError::field(
                format!("items[{i}].variant_id"),
                "is in the list twice; give it one line",
            ));
        }
        sellable_as(
            tx,
            store,
            variant,
            quantity,
            &format!("items[{i}].variant_id"),
        )?;
    }
    store::clear_items(tx, id)?;
    for &(variant, quantity) in items {
        store::put_item(tx, id, variant, quantity)?;
    }
    store::touch(tx, store, id, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

fn lines(c: &Connection, store: StoreId, id: CartId) -> Result<usize, AppError> {
    Ok(store::get(c, store, id)?.map_or(0, |x| x.items.len()))
}

/// Sets the quantity of a line the cart has (404 otherwise).
pub fn set_quantity(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    variant: VariantId,
    quantity: i64,
    now: DateTime<Utc>,
) -> Result<CartOut, AppError> {
    check_quantity(quantity)?;
    editable(tx, store, id)?;
    if store::quantity(tx, id, variant)?.is_none() {
        return Err(AppError::not_found("cart item"));
    }
    sellable(tx, store, variant, quantity)?;
    store::put_item(tx, id, variant, quantity)?;
    store::touch(tx, store, id, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// Removes a line the cart has (404 otherwise).
pub fn remove_item(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    variant: VariantId,
    now: DateTime<Utc>,
) -> Result<CartOut, AppError> {
    editable(tx, store, id)?;
    if !store::remove_item(tx, id, variant)? {
        return Err(AppError::not_found("cart item"));
    }
    store::touch(tx, store, id, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// The contact as customers keep it: an e-mail (trimmed, lowercased) and a phone, each
/// checked (422); empty strings clear them.
pub fn contact(email: Option<&str>, phone: Option<&str>) -> Result<CartCustomer, AppError> {
    Ok(CartCustomer {
        email: email
            .map(crate::customers::model::email)
            .transpose()?
            .flatten(),
        phone: phone
            .map(crate::customers::model::phone)
            .transpose()?
            .flatten(),
    })
}

/// Replaces the cart's contact.
pub fn set_contact(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    contact: &CartCustomer,
    now: DateTime<Utc>,
) -> Result<CartOut, AppError> {
    editable(tx, store, id)?;
    store::set_contact(tx, store, id, contact, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// What a checkout made.
#[derive(Debug)]
pub struct Checkout {
    pub order: OrderOut,
    pub cart: CartOut,
}

/// Turns the cart into an order through the orders area's own create
/// (`orders::writes::create_in`, source `storefront`: priced from the variants, stock
/// reserved, `orders.created`, never refused for the plan), for the customer with the
/// cart's e-mail or phone (made, with `customers.created`, when the store has none). The
/// cart becomes `converted`, or `recovered` with `carts.recovered` when it had been
/// abandoned. An empty cart or one without a contact is 422; one checked out already, 409.
pub fn checkout(
    tx: &Tx<'_>,
    plans: &Catalog,
    store: StoreId,
    id: CartId,
    note: Option<String>,
    now: DateTime<Utc>,
) -> Result<Checkout, AppError> {
    let from = store::head(tx, store, id)?.ok_or_else(not_found)?.status;
    if !from.is_editable() {
        return Err(checked_out());
    }
    let cart = store::get(tx, store, id)?.ok_or_else(not_found)?;
    if cart.items.is_empty() {
        return Err(AppError::field("items", "the cart is empty"));
    }
    let who = &cart.customer;
    if who.email.is_none() && who.phone.is_none() {
        return Err(AppError::field(
            "customer",
            "set an e-mail or a phone first (PUT .../customer)",
        ));
    }
    for (i, item) in cart.items.iter().enumerate() {
        if store::offer(tx, store, item.variant_id)?.is_none_or(|(on_sale, _)| !on_sale) {
            return Err(AppError::field(
                format!("items[{i}].variant_id"),
                "is no longer on sale; remove it from the cart",
            ));
        }
    }
    let tenant = crate::orders::store::tenant_of(tx, store)?;
    let actor = Actor {
        store_id: Some(store),
        ..Actor::system(tenant, "storefront")
    };
    let customer = customer_for(tx, &actor, store, who, now)?;
    let input = OrderIn {
        customer_id: customer,
        items: cart
            .items
            .iter()
            .map(|i| OrderItemIn {
                variant_id: i.variant_id,
                quantity: i.quantity,
                unit_price_cents: None,
            })
            .collect(),
        shipping_cents: None,
        discount_cents: None,
        note,
    };
    let order =
        crate::orders::writes::create_in(tx, plans, &actor, &input, Origin::Storefront, now)
            .map_err(shopper_safe)?;
    let to = if from == CartStatus::Abandoned {
        CartStatus::Recovered
    } else {
        CartStatus::Converted
    };
    if !store::check_out(tx, store, id, from, to, order.id, now)? {
        return Err(checked_out());
    }
    let cart = store::get(tx, store, id)?.ok_or_else(not_found)?;
    if to == CartStatus::Recovered {
        let data = CartRecovered {
            cart: cart.clone(),
            order_id: order.id,
        };
        webhooks::publish(tx, Some(store), Event::CartsRecovered, &data, now)?;
    }
    Ok(Checkout { order, cart })
}

/// The store's customer with the cart's e-mail (or else phone); a new one named by it
/// otherwise, recorded like any other (`customers.created`, audited as the storefront).
fn customer_for(
    tx: &Tx<'_>,
    actor: &Actor,
    store: StoreId,
    who: &CartCustomer,
    now: DateTime<Utc>,
) -> Result<CustomerId, AppError> {
    use crate::customers::store as customers;
    if let Some(id) =
        customers::find_by_contact(tx, store, who.email.as_deref(), who.phone.as_deref())?
    {
        return Ok(id);
    }
    let id = CustomerId::new();
    let name = who.email.clone().or_else(|| who.phone.clone());
    let fields = customers::Fields {
        name,
        email: Some(who.email.clone()),
        phone: Some(who.phone.clone()),
        ..customers::Fields::default()
    };
    customers::insert(tx, store, id, &fields, now)?;
    let c = customers::get(tx, store, id)?
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("customer {id} vanished")))?;
    webhooks::publish_change(
        tx,
        actor,
        &webhooks::Change {
            event: Event::CustomersCreated,
            data: &c,
            action: "customer.created",
            resource_id: &id.to_string(),
        },
        now,
    )?;
    Ok(id)
}

/// `cart:updated` for the conversation's sockets (the team's and the widget's), to publish
/// once the change commits; `cart` None once detached.
pub fn cart_updated(store: StoreId, conv: ConversationId, cart: Option<&CartOut>) -> [Frame; 2] {
    let data = CartUpdated {
        conversation_id: conv,
        cart: cart.cloned(),
    };
    crate::inbox::events::cart_updated(store, conv, &data)
}

/// What a change to the cart publishes: `cart:updated` when an assisted sale attached it to
/// a conversation, nothing otherwise (the storefront's routes call it for the shopper's).
pub fn frames_for(c: &Connection, store: StoreId, id: CartId) -> Result<Vec<Frame>, AppError> {
    let Some(conv) = store::head(c, store, id)?.and_then(|h| h.conversation) else {
        return Ok(Vec::new());
    };
    let cart = store::get(c, store, id)?;
    Ok(cart_updated(store, conv, cart.as_ref()).into())
}
