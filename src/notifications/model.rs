//! Notification DTOs and the kinds a store produces.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::permissions::Permission;
use crate::ids::{NotificationId, StoreId};

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A new order (`orders.created`).
    NewOrder,
    /// A stock level fell to its threshold (`inventory.low_stock`).
    LowStock,
    /// A shopper started a conversation in the inbox.
    NewConversation,
    /// A review arrived waiting for moderation.
    ReviewPending,
    /// The organization's subscription is past due.
    SubscriptionPastDue,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::NewOrder,
        Kind::LowStock,
        Kind::NewConversation,
        Kind::ReviewPending,
        Kind::SubscriptionPastDue,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NewOrder => "new_order",
            Kind::LowStock => "low_stock",
            Kind::NewConversation => "new_conversation",
            Kind::ReviewPending => "review_pending",
            Kind::SubscriptionPastDue => "subscription_past_due",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// Who may receive it: the members whose role holds this permission in the store (the
    /// one role table, `Role::permissions`).
    pub fn permission(self) -> Permission {
        match self {
            Kind::NewOrder => Permission::OrdersRead,
            Kind::LowStock => Permission::InventoryRead,
            Kind::NewConversation => Permission::ConversationsRead,
            Kind::ReviewPending => Permission::ReviewsRead,
            Kind::SubscriptionPastDue => Permission::BillingRead,
        }
    }
}

/// The resource a notification points at.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Subject {
    /// `order`, `variant`, `conversation`, `review` or `subscription`.
    #[serde(rename = "type")]
    pub subject_type: String,
    pub id: String,
}

/// An out-of-app copy of a notification and how its sending went.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryOut {
    /// `email` or `msgapp`.
    pub channel: String,
    /// `pending` (queued or retrying), `sent` or `failed` (after the last attempt).
    pub status: String,
    pub attempts: i64,
    /// `notification_send_failed` once an attempt failed.
    pub error_code: Option<String>,
    /// The provider's answer to the last failed attempt.
    pub error: Option<String>,
    pub sent_at: Option<String>,
}

/// One entry of the caller's feed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NotificationOut {
    pub id: NotificationId,
    pub store_id: StoreId,
    pub kind: Kind,
    pub title: String,
    pub body: String,
    pub subject: Subject,
    pub read_at: Option<String>,
    pub created_at: String,
    /// The e-mail and messaging-app copies, if the member's preferences asked for any.
    pub deliveries: Vec<DeliveryOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NotificationFilter {
    /// `true`: only those not read yet.
    pub unread: Option<bool>,
}

/// Most ids one mark-read request names.
pub const MAX_READ_IDS: usize = 200;

/// Marks the caller's notifications read: some `ids` (at most 200), or `all`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadIn {
    pub ids: Option<Vec<NotificationId>>,
    pub all: Option<bool>,
}

impl utoipa::PartialSchema for ReadIn {
    /// Exactly one of `ids` and `all: true`, as the handler takes them.
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{
            AdditionalProperties, ArrayBuilder, ObjectBuilder, OneOfBuilder, Type,
        };
        let closed = || {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        };
        let null = || ObjectBuilder::new().schema_type(Type::Null);
        let ids = ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name(
                <NotificationId as ToSchema>::name(),
            ))
            .max_items(Some(MAX_READ_IDS));
        OneOfBuilder::new()
            .description(Some(
                "Some `ids` (at most 200; others', unknown or read ones count nothing), or \
                 `all: true`.",
            ))
            .item(
                closed()
                    .property("ids", ids)
                    .required("ids")
                    .property("all", null()),
            )
            .item(
                closed()
                    .property(
                        "all",
                        ObjectBuilder::new()
                            .schema_type(Type::Boolean)
                            .enum_values(Some([true])),
                    )
                    .required("all")
                    .property("ids", null()),
            )
            .into()
    }
}

impl ToSchema for ReadIn {
    fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        out.push((
            <NotificationId as ToSchema>::name().into(),
            <NotificationId as utoipa::PartialSchema>::schema(),
        ));
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReadOut {
    /// How many went from unread to read (ids of others, of another store, unknown or
    /// already read count nothing).
    pub marked: i64,
    /// The caller's unread notifications in this store after the change.
    pub unread: i64,
}

/// How a member hears about one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Channels {
    pub in_app: bool,
    pub email: bool,
    pub msgapp: bool,
}

impl Default for Channels {
    /// In the feed only: copies elsewhere are opted into.
    fn default() -> Self {
        Self {
            in_app: true,
            email: false,
            msgapp: false,
        }
    }
}

/// Every kind with the member's channels (defaults where unchanged).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PreferencesOut {
    pub kinds: BTreeMap<String, Channels>,
}

/// The kinds to change, each with all three channels; kinds left out keep theirs.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreferencesIn {
    /// Kind (one of the notification kinds) to its channels.
    #[schema(schema_with = kinds_in)]
    pub kinds: BTreeMap<String, Channels>,
}

/// The schema of [`PreferencesIn::kinds`]: a map whose keys are [`Kind::ALL`]'s names (the
/// handler refuses any other).
fn kinds_in() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::RefOr(
            utoipa::openapi::Ref::from_schema_name(<Channels as ToSchema>::name()).into(),
        )))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(Kind::ALL.iter().map(|k| k.as_str()))),
        ))
        .build()
}
