//! Typed ids (STYLE 14): every entity's id is its own newtype over a UUID, so a store id can
//! never be passed where an order id is expected. New ids are v7 (time-ordered, which keeps
//! SQLite's b-trees append-mostly); clients treat them as opaque strings.

/// Declares `pub struct $name(pub Uuid)` with serde, SQLite and OpenAPI support.
#[macro_export]
macro_rules! id_type {
    ($name:ident) => {
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub uuid::Uuid);

        impl $name {
            #[must_use]
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                uuid::Uuid::parse_str(s).map(Self)
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.0.to_string()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                v: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let s = v.as_str()?;
                uuid::Uuid::parse_str(s)
                    .map(Self)
                    .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

id_type!(UserId);
id_type!(TenantId);
id_type!(StoreId);
id_type!(JobId);
id_type!(EventId);
id_type!(SessionId);
id_type!(PairId);
id_type!(ApiTokenId);
id_type!(WebhookId);
id_type!(AttemptId);
id_type!(ProductId);
id_type!(VariantId);
id_type!(CategoryId);
id_type!(CustomerId);
id_type!(OrderId);
id_type!(PaymentId);
id_type!(RefundId);
id_type!(ReviewId);
id_type!(AdjustmentId);
id_type!(ChannelId);
id_type!(ConversationId);
id_type!(MessageId);
id_type!(NoteId);
id_type!(AssistantConversationId);
id_type!(AssistantMessageId);
id_type!(ProposalId);
id_type!(ActionId);
id_type!(InvoiceId);
id_type!(WorkflowId);
id_type!(WorkflowRunId);
id_type!(CartId);
id_type!(SupplierId);
id_type!(PurchaseOrderId);
id_type!(SegmentId);
id_type!(CampaignId);
id_type!(PageId);
id_type!(NotificationId);
id_type!(NotificationDeliveryId);
