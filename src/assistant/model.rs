//! Assistant DTOs (spec 2.13 leaves them open; these follow the OpenAI chat shapes the
//! model speaks): conversations, transcript messages, proposals, actions, usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::ids::{ActionId, AssistantConversationId, AssistantMessageId, ProposalId, StoreId};
use crate::text_enum;

text_enum! {
    /// Who wrote a transcript message. `decision` records the user approving or declining a
    /// proposal (the model is told).
    // Named apart from the store roles' `Role` in the document.
    #[schema(as = MessageRole)]
    pub enum Role {
        User = "user",
        Assistant = "assistant",
        Tool = "tool",
        Decision = "decision",
    }
}

text_enum! {
    /// What approving a proposal risks: `none`, `destructive` (hard to take back), `money`
    /// (moves money), `external` (reaches a customer or the public). All but `none` need
    /// `confirmed=true`.
    pub enum Risk {
        None = "none",
        Destructive = "destructive",
        Money = "money",
        External = "external",
    }
}

text_enum! {
    /// `pending` until approved (`applied`, or `failed` when the write was refused),
    /// declined, or an hour passes (`expired`); `applying` while an approval runs.
    pub enum ProposalStatus {
        Pending = "pending",
        Applying = "applying",
        Applied = "applied",
        Declined = "declined",
        Failed = "failed",
        /// The server stopped while applying a refund or a reply: it may have gone out
        /// (see the order or the conversation).
        Interrupted = "interrupted",
        Expired = "expired",
    }
}

/// A chat message to the assistant.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatIn {
    /// Continue this conversation; omitted, a new one starts (named after the message).
    pub conversation_id: Option<AssistantConversationId>,
    /// 1 to 8,000 characters.
    #[schema(min_length = 1, max_length = 8000, pattern = r"\S")]
    pub message: String,
}

/// A rename.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AssistantConversationPatch)]
pub struct ConversationPatch {
    /// 1 to 120 characters.
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssistantConversationOut {
    pub id: AssistantConversationId,
    pub store_id: StoreId,
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    /// Proposals of this conversation awaiting a decision (the single-conversation reads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_proposals: Option<Vec<ProposalOut>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ToolCallOut {
    pub id: String,
    pub tool: String,
    /// The arguments the model gave (JSON), or the text it wrote when that was not JSON.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

/// One message of the transcript, oldest first: user and assistant text, the assistant's
/// tool calls, each tool's result (`role` = `tool`, `content` its JSON), and decisions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TranscriptMessage {
    pub id: AssistantMessageId,
    pub role: Role,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
    /// On a tool message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// On a tool message that became a proposal: the proposal as it now stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalOut>,
    /// `stopped` or `error` when the turn ended before the model finished this message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProposalOut {
    pub id: ProposalId,
    pub conversation_id: AssistantConversationId,
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// What approving it does, in words.
    pub summary: String,
    pub risk: Risk,
    pub status: ProposalStatus,
    pub expires_at: String,
    pub decided_at: Option<String>,
    pub created_at: String,
}

/// A write the assistant made once its user approved it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionOut {
    pub id: ActionId,
    pub store_id: StoreId,
    pub proposal_id: ProposalId,
    /// Null once that conversation is deleted.
    pub conversation_id: Option<AssistantConversationId>,
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    pub summary: String,
    /// What it changed (`product`, `order`, `variant`, `review`, `message`, `refund`).
    pub resource_type: String,
    pub resource_id: String,
    /// Whether `POST .../undo` can take it back (refunds and sent messages cannot).
    pub undoable: bool,
    pub undone_at: Option<String>,
    pub created_at: String,
}

/// This month's use of the assistant by the store.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageOut {
    /// Messages sent to the assistant this period.
    pub used: i64,
    /// The plan's `assistant_messages_per_store_per_month`, at most the operator's ceiling.
    pub cap: i64,
    pub period_start: String,
    pub period_end: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListConversationsQuery {
    /// Matches the name or any message of the conversation.
    pub search: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApproveQuery {
    /// Required (`true`) for `destructive`, `money` and `external` proposals.
    pub confirmed: Option<bool>,
}
