//! Inbox DTOs: channels, conversations and their inbox rows, messages (spec 2.8), notes.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::{ChannelId, ConversationId, CustomerId, MessageId, NoteId, StoreId, UserId};
use crate::text_enum;

text_enum! {
    /// Where a conversation comes from.
    pub enum ChannelKind {
        /// The chat widget on the store's site.
        StorefrontChat = "storefront_chat",
        /// The messaging app (Cloud API).
        Msgapp = "msgapp",
        Email = "email",
    }
}

text_enum! {
    /// `open` needs the team; `pending` waits on the contact; `snoozed` comes back at
    /// `snoozed_until`; `resolved` is done (a new contact message opens it again).
    pub enum ConversationStatus {
        Open = "open",
        Pending = "pending",
        Resolved = "resolved",
        Snoozed = "snoozed",
    }
}

text_enum! {
    pub enum Priority {
        None = "none",
        Low = "low",
        Medium = "medium",
        High = "high",
        Urgent = "urgent",
    }
}

impl Priority {
    /// 0 for `none` up to 4 for `urgent`: the stored sort key of `sort=priority`.
    pub fn rank(self) -> i64 {
        match self {
            Self::None => 0,
            Self::Low => 1,
            Self::Medium => 2,
            Self::High => 3,
            Self::Urgent => 4,
        }
    }
}

text_enum! {
    pub enum Sender {
        Visitor = "visitor",
        Agent = "agent",
        Bot = "bot",
        System = "system",
    }
}

text_enum! {
    pub enum DeliveryStatus {
        Sent = "sent",
        Delivered = "delivered",
        Read = "read",
        Failed = "failed",
    }
}

text_enum! {
    /// The inbox list's orders.
    pub enum ConversationSort {
        /// Most recent message (or creation) first. The default.
        NewestActivity = "newest_activity",
        /// Longest-waiting contact first; conversations nobody waits on come last.
        OldestWaiting = "oldest_waiting",
        /// Most urgent first, then newest activity.
        Priority = "priority",
    }
}

// ---- channels ---------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChannelOut {
    pub id: ChannelId,
    pub store_id: StoreId,
    pub kind: ChannelKind,
    pub name: String,
    /// The public key a chat widget's `data-key` names; null for other kinds.
    pub key: Option<String>,
    pub enabled: bool,
    /// Origins a chat widget may be embedded on (`https://shop.example`); empty allows any.
    pub allowed_origins: Vec<String>,
    /// The settings that may be shown (`phone_number_id`, `address`); secrets never are.
    #[schema(value_type = Object)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// Settings by kind. Messaging app: `phone_number_id`, `app_secret`, `verify_token` (all
/// required). E-mail: `address`, `inbound_secret` (both required). Secrets are sealed at rest
/// and never returned.
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelSettings {
    pub phone_number_id: Option<String>,
    pub app_secret: Option<String>,
    pub verify_token: Option<String>,
    pub address: Option<String>,
    pub inbound_secret: Option<String>,
}

/// A new channel; what it takes depends on its `kind` (see the schema below).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelIn {
    pub kind: ChannelKind,
    /// 1 to 120 characters.
    pub name: String,
    /// Chat only.
    pub allowed_origins: Option<Vec<String>>,
    pub settings: Option<ChannelSettings>,
}

/// The origins a chat widget may be embedded on, as the handler takes them: at most 50 of a
/// scheme and a host name, and a port of four digits (`http://localhost:3000`); a default
/// port written out is refused, as is a host that reads as an IP address.
fn origins_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(ObjectBuilder::new().schema_type(Type::String).pattern(Some(
            r"^https?://([a-z0-9]+(-[a-z0-9]+)*\.)*[a-z][a-z0-9]*(-[a-z0-9]+)*(:[1-9][0-9]{3})?/?$",
        )))
        .max_items(Some(50))
        .examples([serde_json::json!(["https://shop.example.com"])])
        .build()
}

/// Text of 1 to `max` characters matching `pattern`, as a channel's fields are checked.
fn channel_text(max: usize, pattern: &str) -> utoipa::openapi::schema::ObjectBuilder {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(max))
        .pattern(Some(pattern))
}

/// The settings of a messaging-app channel, then of an e-mail channel, as `split_settings`
/// checks them.
fn kind_settings() -> [Vec<(&'static str, utoipa::openapi::schema::ObjectBuilder)>; 2] {
    let secret = || channel_text(255, r"\S");
    [
        vec![
            (
                "phone_number_id",
                channel_text(32, r"^[0-9]{1,32}$").examples([serde_json::json!("1234567890")]),
            ),
            ("app_secret", secret()),
            ("verify_token", secret()),
        ],
        vec![
            (
                "address",
                channel_text(254, r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")
                    .examples([serde_json::json!("support@shop.example.com")]),
            ),
            ("inbound_secret", secret()),
        ],
    ]
}

/// A change's `settings`: some of one kind's (a channel takes only its own kind's), or null.
fn settings_patch_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{AdditionalProperties, AnyOfBuilder, ObjectBuilder, Type};
    let mut any = AnyOfBuilder::new()
        .description(Some(
            "Replaces the settings it names and keeps the others: a messaging-app channel's \
             (`phone_number_id`, `app_secret`, `verify_token`) or an e-mail channel's \
             (`address`, `inbound_secret`); a chat channel takes none.",
        ))
        .item(ObjectBuilder::new().schema_type(Type::Null));
    for fields in kind_settings() {
        let mut o = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        for (name, schema) in fields {
            o = o.property(name, schema);
        }
        any = any.item(o);
    }
    utoipa::openapi::schema::Schema::AnyOf(any.build())
}

impl utoipa::PartialSchema for ChannelIn {
    /// One object per kind, with the settings that kind requires (a chat channel takes
    /// none, and is the only one with `allowed_origins`), as `split_settings` checks them.
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{
            AdditionalProperties, ObjectBuilder, OneOfBuilder, SchemaType, Type,
        };
        let closed = |types: SchemaType| {
            ObjectBuilder::new()
                .schema_type(types)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        };
        let channel = |kind: &str| {
            closed(SchemaType::new(Type::Object))
                .property(
                    "kind",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([kind])),
                )
                .required("kind")
                .property("name", channel_text(120, r"\S"))
                .required("name")
        };
        let settings = |fields: Vec<(&str, ObjectBuilder)>| {
            let mut o = closed(SchemaType::new(Type::Object));
            for (name, schema) in fields {
                o = o.property(name, schema).required(name);
            }
            o
        };
        let [msgapp, email] = kind_settings();
        OneOfBuilder::new()
            .description(Some(
                "A new channel. `storefront_chat`: optional `allowed_origins`, no settings. \
                 `msgapp`: `settings` with `phone_number_id` (the provider's numeric id), \
                 `app_secret` and `verify_token`. `email`: `settings` with `address` and \
                 `inbound_secret`. Secrets are sealed at rest and never returned.",
            ))
            .item(
                channel("storefront_chat")
                    .property("allowed_origins", origins_schema())
                    .property(
                        "settings",
                        closed(SchemaType::from_iter([Type::Object, Type::Null])),
                    ),
            )
            .item(
                channel("msgapp")
                    .property("settings", settings(msgapp))
                    .required("settings"),
            )
            .item(
                channel("email")
                    .property("settings", settings(email))
                    .required("settings"),
            )
            .into()
    }
}

impl ToSchema for ChannelIn {}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelPatch {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: Option<String>,
    pub enabled: Option<bool>,
    /// Chat channels only.
    #[schema(schema_with = origins_schema)]
    pub allowed_origins: Option<Vec<String>>,
    #[schema(schema_with = settings_patch_schema)]
    pub settings: Option<ChannelSettings>,
}

// ---- conversations ----------------------------------------------------------------------

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct Contact {
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
}

/// The bare conversation (what `conversation:updated` carries).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationOut {
    pub id: ConversationId,
    pub store_id: StoreId,
    pub channel_id: ChannelId,
    pub channel_kind: ChannelKind,
    pub status: ConversationStatus,
    pub priority: Priority,
    pub assignee_user_id: Option<UserId>,
    pub labels: Vec<String>,
    pub bot_active: bool,
    pub unread_for_agents: i64,
    pub unread_for_visitor: i64,
    pub contact: Contact,
    pub customer_id: Option<CustomerId>,
    pub last_message_at: Option<String>,
    /// When the messaging app's 24-hour reply window closes; null for other channels.
    pub reply_window_expires_at: Option<String>,
    pub snoozed_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A row of the inbox list: the conversation and what the list shows beside it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InboxRow {
    #[serde(flatten)]
    pub conversation: ConversationOut,
    /// The contact's name, else e-mail, else phone, else "Visitor".
    pub display_name: String,
    pub assignee_name: Option<String>,
    pub customer_name: Option<String>,
    /// When the oldest contact message still without a team answer arrived.
    pub waiting_since: Option<String>,
}

/// One conversation: its inbox row and its internal notes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationDetail {
    #[serde(flatten)]
    pub row: InboxRow,
    pub notes: Vec<NoteOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConversationFilter {
    /// Words in the contact's name, e-mail or phone, or in the messages' text.
    pub search: Option<String>,
    pub channel_kind: Option<ChannelKind>,
    pub status: Option<ConversationStatus>,
    pub priority: Option<Priority>,
    /// `me`, `none`, or a user id.
    #[param(schema_with = assignee_filter)]
    pub assignee: Option<String>,
    // Inline: no response carries the enum, so it would be referenced but never defined.
    #[param(inline)]
    pub sort: Option<ConversationSort>,
}

/// The schema of the inbox's `assignee` filter: `me`, `none` or a user id.
fn assignee_filter() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    use utoipa::openapi::{KnownFormat, SchemaFormat};
    OneOfBuilder::new()
        .description(Some("`me`, `none` (unassigned), or a user id."))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["me", "none"])),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
        )
        .build()
        .into()
}

/// The inbox badges.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationCounts {
    pub open: i64,
    pub pending: i64,
    pub resolved: i64,
    pub snoozed: i64,
    /// Open conversations nobody is assigned to.
    pub unassigned: i64,
    /// Open conversations assigned to the caller.
    pub mine: i64,
}

/// Every field optional; `assignee_user_id: null` unassigns, `snoozed_until` is needed with
/// `status: snoozed` and cleared by any other status.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationPatch {
    pub status: Option<ConversationStatus>,
    pub priority: Option<Priority>,
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(value_type = Option<UserId>)]
    pub assignee_user_id: Option<Option<UserId>>,
    /// At most 20 labels of 1 to 50 characters.
    #[schema(max_items = 20)]
    pub labels: Option<Vec<String>>,
    pub snoozed_until: Option<String>,
}

/// [`ConversationPatch`] as the handler takes it: `snoozed_until`, a future time, comes with
/// `status: snoozed` and with nothing else (`snooze` in conversations.rs).
pub struct ConversationPatchIn;

impl utoipa::PartialSchema for ConversationPatchIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{
            KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, SchemaType, Type,
        };
        let fields = || match <ConversationPatch as utoipa::PartialSchema>::schema() {
            RefOr::T(Schema::Object(o)) => o,
            _ => unreachable!("a struct's schema is an object"),
        };
        let mut snoozed = fields();
        snoozed.properties.insert(
            "status".to_owned(),
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["snoozed"]))
                .into(),
        );
        snoozed.properties.insert(
            "snoozed_until".to_owned(),
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                .description(Some("When the conversation opens again: a future time."))
                .examples([serde_json::json!("2036-03-14T15:09:26Z")])
                .into(),
        );
        snoozed.required = vec!["status".to_owned(), "snoozed_until".to_owned()];
        let mut other = fields();
        other.properties.remove("snoozed_until");
        let others: Vec<Option<&str>> = ConversationStatus::ALL
            .iter()
            .filter(|s| **s != ConversationStatus::Snoozed)
            .map(|s| Some(s.as_str()))
            .chain([None])
            .collect();
        other.properties.insert(
            "status".to_owned(),
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .enum_values(Some(others))
                .into(),
        );
        OneOfBuilder::new()
            .description(Some(
                "Changes status, priority, assignee or labels; `status: snoozed` comes with \
                 `snoozed_until` (a future time), which no other change takes.",
            ))
            .item(other)
            .item(snoozed)
            .into()
    }
}

impl ToSchema for ConversationPatchIn {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ConversationPatch")
    }

    fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        <ConversationPatch as ToSchema>::schemas(out);
    }
}

// ---- messages and notes -----------------------------------------------------------------

/// A file to attach to a message, as received.
#[derive(Debug, Clone)]
pub struct NewFile {
    pub name: Option<String>,
    pub mime_type: String,
    pub data: Vec<u8>,
}

impl NewFile {
    /// `image`, `video`, `audio` or `file`, by the media type.
    pub fn kind(&self) -> &'static str {
        match self.mime_type.split('/').next() {
            Some("image") => "image",
            Some("video") => "video",
            Some("audio") => "audio",
            _ => "file",
        }
    }
}

/// A stored file, as served.
#[derive(Debug)]
pub struct StoredFile {
    pub name: Option<String>,
    pub mime_type: String,
    pub data: Vec<u8>,
}

/// A message's file (spec 2.8).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttachmentOut {
    pub index: i64,
    /// `image`, `video`, `audio` or `file`.
    pub kind: String,
    pub name: Option<String>,
    pub mime_type: String,
    pub size: Option<i64>,
    /// Absolute link; needs the Authorization header (or the widget's visitor token).
    pub url: String,
    /// The same link relative to the API origin.
    pub path: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MessageOut {
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub store_id: StoreId,
    pub sender: Sender,
    pub agent_user_id: Option<UserId>,
    pub text: String,
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    pub external_id: Option<String>,
    pub delivery_status: DeliveryStatus,
    pub delivery_error: Option<String>,
    pub read_at: Option<String>,
    pub created_at: String,
    pub attachments: Vec<AttachmentOut>,
}

impl MessageOut {
    /// Makes the attachments' links absolute on `origin` (`AppState::public_url`).
    #[must_use]
    pub fn linked(mut self, origin: &str) -> Self {
        for a in &mut self.attachments {
            a.url = format!("{origin}{}", a.path);
        }
        self
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageIn {
    /// 1 to 4,096 characters, not blank (422 `empty_message`, `message_too_long`).
    #[schema(min_length = 1, max_length = 4096, pattern = r"\S")]
    pub text: String,
}

/// What sending answers: the message and the conversation as it now is.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Sent {
    pub message: MessageOut,
    pub conversation: ConversationOut,
}

impl Sent {
    /// [`MessageOut::linked`].
    #[must_use]
    pub fn linked(mut self, origin: &str) -> Self {
        self.message = self.message.linked(origin);
        self
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MessageFilter {
    /// A message id: only newer messages, oldest first (the catch-up recipe of spec 6.4).
    pub after: Option<MessageId>,
    /// A message id: only older messages, newest first.
    pub before: Option<MessageId>,
    /// Only messages created after this time (RFC 3339), oldest first.
    #[param(format = DateTime)]
    pub created_after: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoteOut {
    pub id: NoteId,
    pub conversation_id: ConversationId,
    pub author_user_id: Option<UserId>,
    pub text: String,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteIn {
    /// 1 to 4,096 characters, not blank.
    #[schema(min_length = 1, max_length = 4096, pattern = r"\S")]
    pub text: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypingIn {
    pub typing: bool,
}

/// A single-use ticket for `/ws/conversations`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WsTicket {
    pub ticket: String,
    /// Seconds it stays valid (60).
    pub expires_in: i64,
}
