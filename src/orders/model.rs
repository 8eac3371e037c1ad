//! Order DTOs and the status lifecycle.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ArrayItems, Object};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::events::Event;
use crate::ids::{CustomerId, OrderId, PaymentId, ProductId, RefundId, StoreId, VariantId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Pending,
    Paid,
    Fulfilled,
    Shipped,
    Delivered,
    Cancelled,
    PartiallyRefunded,
    Refunded,
}

impl OrderStatus {
    pub const ALL: [Self; 8] = [
        Self::Pending,
        Self::Paid,
        Self::Fulfilled,
        Self::Shipped,
        Self::Delivered,
        Self::Cancelled,
        Self::PartiallyRefunded,
        Self::Refunded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Paid => "paid",
            Self::Fulfilled => "fulfilled",
            Self::Shipped => "shipped",
            Self::Delivered => "delivered",
            Self::Cancelled => "cancelled",
            Self::PartiallyRefunded => "partially_refunded",
            Self::Refunded => "refunded",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The statuses `PATCH` may move an order to from this one. Refunds move orders to
    /// `partially_refunded` and `refunded`; `PATCH` never does.
    pub fn allowed_next(self) -> &'static [Self] {
        match self {
            Self::Pending => &[Self::Paid, Self::Cancelled],
            Self::Paid => &[Self::Fulfilled, Self::Cancelled],
            Self::Fulfilled => &[Self::Shipped],
            Self::Shipped => &[Self::Delivered],
            Self::Delivered | Self::Cancelled | Self::PartiallyRefunded | Self::Refunded => &[],
        }
    }

    /// Whether a refund may move an order in this status to `partially_refunded` or
    /// `refunded` (a cancelled order with a payment is refunded but stays cancelled).
    pub fn refund_moves(self) -> bool {
        matches!(
            self,
            Self::Paid
                | Self::Fulfilled
                | Self::Shipped
                | Self::Delivered
                | Self::PartiallyRefunded
        )
    }

    /// The event a move to this status fires.
    pub fn event(self) -> Event {
        match self {
            Self::Paid => Event::OrdersPaid,
            Self::Fulfilled => Event::OrdersFulfilled,
            Self::Shipped => Event::OrdersShipped,
            Self::Delivered => Event::OrdersDelivered,
            Self::Cancelled => Event::OrdersCancelled,
            Self::Refunded => Event::OrdersRefunded,
            Self::Pending | Self::PartiallyRefunded => Event::OrdersUpdated,
        }
    }
}

/// A line of a new order.
// The documents name it `ManualOrderItemIn`, as only a manual order takes
// `unit_price_cents`; `POST .../orders` is described by `PlainOrderIn`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ManualOrderItemIn)]
pub struct OrderItemIn {
    pub variant_id: VariantId,
    /// 1 to 10000.
    #[schema(minimum = 1, maximum = 10_000)]
    pub quantity: i64,
    /// Manual orders only (elsewhere 422): the price to charge instead of the variant's,
    /// 0 to 10^12 cents.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub unit_price_cents: Option<i64>,
}

/// A new order; a manual one's lines may set their own `unit_price_cents`.
// One type for both creates (`check_new` refuses `unit_price_cents` but on a manual one);
// the documents name it `ManualOrderIn` and describe `POST .../orders` by `PlainOrderIn`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ManualOrderIn)]
pub struct OrderIn {
    pub customer_id: CustomerId,
    /// 1 to 100 lines, each variant once.
    #[schema(min_items = 1, max_items = 100)]
    pub items: Vec<OrderItemIn>,
    /// Default 0; 0 to 10^12 cents.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub shipping_cents: Option<i64>,
    /// Default 0; at most subtotal plus shipping.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub discount_cents: Option<i64>,
    /// Up to 5,000 characters.
    #[schema(max_length = 5000)]
    pub note: Option<String>,
}

/// `schema` (a struct's object schema), edited by `edit`.
fn edited(schema: RefOr<Schema>, edit: impl FnOnce(&mut Object)) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(mut o)) = schema else {
        unreachable!("a struct's schema is an object")
    };
    edit(&mut o);
    o.into()
}

/// The schema of a line of `POST .../orders`: [`OrderItemIn`] without `unit_price_cents`
/// (an order that is not manual charges the variant's price).
pub struct PlainOrderItemIn;

impl PartialSchema for PlainOrderItemIn {
    fn schema() -> RefOr<Schema> {
        edited(<OrderItemIn as PartialSchema>::schema(), |o| {
            o.properties.remove("unit_price_cents");
            o.description = Some("A line of a new order, at its variant's price.".to_owned());
        })
    }
}

impl ToSchema for PlainOrderItemIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OrderItemIn")
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        <OrderItemIn as ToSchema>::schemas(out);
    }
}

/// The schema of `POST .../orders`: [`OrderIn`] whose lines are [`PlainOrderItemIn`].
pub struct PlainOrderIn;

impl PartialSchema for PlainOrderIn {
    fn schema() -> RefOr<Schema> {
        edited(<OrderIn as PartialSchema>::schema(), |o| {
            o.description = Some(
                "A new order: its lines are charged at their variants' prices (a manual \
                 order, `POST .../orders/manual`, may set its own)."
                    .to_owned(),
            );
            if let Some(RefOr::T(Schema::Array(items))) = o.properties.get_mut("items") {
                items.items = ArrayItems::RefOrSchema(Box::new(
                    Ref::from_schema_name(PlainOrderItemIn::name()).into(),
                ));
            }
        })
    }
}

impl ToSchema for PlainOrderIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OrderIn")
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        out.push((PlainOrderItemIn::name().into(), PlainOrderItemIn::schema()));
        PlainOrderItemIn::schemas(out);
        <OrderIn as ToSchema>::schemas(out);
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderPatch {
    /// One of the order's `allowed_status_transitions`.
    pub status: Option<OrderStatus>,
    /// Up to 5,000 characters.
    #[schema(max_length = 5000)]
    pub note: Option<String>,
}

/// A line as sold: title, SKU and price are copied from the variant at creation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrderItem {
    pub variant_id: VariantId,
    pub product_id: ProductId,
    /// The product's title.
    pub title: String,
    pub variant_title: String,
    pub sku: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub total_cents: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PaymentOut {
    pub id: PaymentId,
    /// `manual` (recorded by hand) or `http` (the payment provider).
    pub provider: String,
    pub amount_cents: i64,
    pub refunded_cents: i64,
    /// `approved`.
    pub status: String,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderOut {
    pub id: OrderId,
    pub store_id: StoreId,
    /// Per-store sequence, from 1001.
    pub number: i64,
    pub customer_id: Option<CustomerId>,
    /// `api`, `manual` or `storefront` (a cart's checkout).
    pub source: String,
    pub items: Vec<OrderItem>,
    pub subtotal_cents: i64,
    pub shipping_cents: i64,
    pub discount_cents: i64,
    pub total_cents: i64,
    pub refunded_cents: i64,
    pub currency: String,
    pub status: OrderStatus,
    pub allowed_status_transitions: Vec<OrderStatus>,
    pub payments: Vec<PaymentOut>,
    pub note: String,
    pub created_at: String,
    pub updated_at: String,
}

impl OrderOut {
    /// Moves the order to `status`; `allowed_status_transitions` follows it.
    pub fn set_status(&mut self, status: OrderStatus) {
        self.status = status;
        self.allowed_status_transitions = status.allowed_next().to_vec();
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OrderFilter {
    pub status: Option<OrderStatus>,
    pub customer_id: Option<CustomerId>,
    /// The order with this number (the `#1042` customers quote): a page of one, or none.
    #[param(minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    pub number: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundIn {
    /// At least 1, at most the refundable balance.
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64)]
    pub amount_cents: i64,
    /// Up to 500 characters.
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RefundOut {
    pub id: RefundId,
    pub order_id: OrderId,
    pub payment_id: PaymentId,
    pub amount_cents: i64,
    pub reason: Option<String>,
    /// `pending` while the provider's answer is not known (the amount stays held),
    /// `succeeded` once it confirmed the refund, `failed` once it refused it.
    pub status: String,
    pub created_at: String,
}
