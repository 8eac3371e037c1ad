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

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelIn {
    pub kind: ChannelKind,
    /// 1 to 120 characters.
    pub name: String,
    /// Chat only.
    pub allowed_origins: Option<Vec<String>>,
    pub settings: Option<ChannelSettings>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelPatch {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub allowed_origins: Option<Vec<String>>,
    /// Replaces the given settings; the others are kept.
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
    pub labels: Option<Vec<String>>,
    pub snoozed_until: Option<String>,
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
