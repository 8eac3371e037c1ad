//! Marketing DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::{CampaignId, CustomerId, SegmentId, StoreId};

/// Which customers a segment holds: every field given must hold (AND); none given is every
/// customer. Campaigns add `accepts_marketing = true` and an e-mail whatever the filter says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentFilter {
    /// Customers carrying at least one of these tags (1 to 20 tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_items = 1, max_items = 20)]
    pub tags_any: Option<Vec<String>>,
    /// The customer's `total_spent_cents` (kept by the orders area) is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub total_spent_min_cents: Option<i64>,
    /// ... and at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub total_spent_max_cents: Option<i64>,
    /// The customer's latest order was placed before this instant (RFC 3339). Customers
    /// with no order do not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_order_before: Option<String>,
    /// The customer's latest order was placed at or after this instant (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_order_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepts_marketing: Option<bool>,
}

/// A saved customer filter (Shopify's customer segment).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SegmentOut {
    pub id: SegmentId,
    pub store_id: StoreId,
    pub name: String,
    pub filter: SegmentFilter,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentIn {
    /// 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: String,
    #[serde(default)]
    pub filter: SegmentFilter,
}

/// Changes any subset; `filter` replaces the whole filter.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: Option<String>,
    pub filter: Option<SegmentFilter>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignStatus {
    Draft,
    Scheduled,
    Sending,
    Sent,
    Cancelled,
}

impl CampaignStatus {
    pub const ALL: [Self; 5] = [
        Self::Draft,
        Self::Scheduled,
        Self::Sending,
        Self::Sent,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Scheduled => "scheduled",
            Self::Sending => "sending",
            Self::Sent => "sent",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// What a campaign's sending did so far.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignStats {
    /// Frozen when sending starts: the segment's customers who accept marketing and have
    /// an e-mail.
    pub recipients: i64,
    pub sent: i64,
    pub failed: i64,
    /// Always null: opens are not tracked (no tracking pixel).
    pub opened: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignOut {
    pub id: CampaignId,
    pub store_id: StoreId,
    pub name: String,
    pub subject: String,
    pub body_markdown: String,
    pub segment_id: SegmentId,
    pub status: CampaignStatus,
    pub scheduled_at: Option<String>,
    /// When the last recipient was settled (sent or failed).
    pub sent_at: Option<String>,
    pub stats: CampaignStats,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignIn {
    /// 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: String,
    /// 1 to 255 characters, one line.
    #[schema(min_length = 1, max_length = 255, pattern = r"^[^\r\n]*\S[^\r\n]*$")]
    pub subject: String,
    /// Markdown, up to 100,000 characters; raw HTML in it is dropped when rendered.
    #[schema(min_length = 1, max_length = 100000, pattern = r"\S")]
    pub body_markdown: String,
    pub segment_id: SegmentId,
}

/// Changes a draft (409 `invalid_status_transition` past draft).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: Option<String>,
    #[schema(min_length = 1, max_length = 255, pattern = r"^[^\r\n]*\S[^\r\n]*$")]
    pub subject: Option<String>,
    #[schema(min_length = 1, max_length = 100000, pattern = r"\S")]
    pub body_markdown: Option<String>,
    pub segment_id: Option<SegmentId>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleIn {
    /// RFC 3339, in a UTC year from 0000 to 9999; absent or not in the future sends now.
    #[schema(format = DateTime)]
    pub scheduled_at: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTestIn {
    /// Where the test copy goes: an address the mailer takes (a dot-atom local part of at
    /// most 64 characters and a host name of labels of at most 63; the pattern is a plain
    /// subset of what it takes: one part of at most 64, or up to four dotted parts of at
    /// most 16).
    #[schema(
        max_length = 254,
        pattern = r"^([A-Za-z0-9_%+-]{1,64}|[A-Za-z0-9_%+-]{1,16}(\.[A-Za-z0-9_%+-]{1,15}){1,3})@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
        example = "ana@example.com"
    )]
    pub email: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecipientStatus {
    Pending,
    Sent,
    Failed,
}

impl RecipientStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Sent, Self::Failed]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

/// One customer a campaign goes to, as frozen when sending started.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecipientOut {
    pub customer_id: CustomerId,
    pub email: String,
    pub name: Option<String>,
    pub status: RecipientStatus,
    /// Delivery attempts made.
    pub attempts: i64,
    /// `email_send_failed` after a failed attempt (kept while retries go on).
    pub error_code: Option<String>,
    /// The mail server's answer to the last failed attempt.
    pub error: Option<String>,
    pub sent_at: Option<String>,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CampaignFilter {
    pub status: Option<CampaignStatus>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RecipientFilter {
    pub status: Option<RecipientStatus>,
}
