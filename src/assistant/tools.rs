//! The tools the model may call. Read tools run at once, with the caller's effective
//! permissions (a tool the caller lacks the permission for is not offered, and refused if
//! called anyway). Write tools never run during a turn: [`prepare`] checks their arguments
//! against the store and describes them, and the turn stores a proposal. Approving it runs
//! [`apply`]: the same area write the REST route runs (`<area>::writes`), so validation,
//! events and the audit entry are the route's own; the audit entry names the assistant.

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::model::Risk;
use crate::audit::{Actor, OnRecord};
use crate::db::rendered::RenderedRows;
use crate::error::AppError;
use crate::http::permissions::{Permission, PermissionSet};
use crate::ids::{ConversationId, OrderId, ProductId, ReviewId, StoreId, VariantId};
use crate::state::AppState;

/// Whether a tool reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub permission: Permission,
    pub kind: Kind,
    /// JSON Schema of the arguments.
    pub parameters: fn() -> Value,
}

fn limit_param() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 20, "description": "How many (default 10)."})
}

/// Every tool, in the order they are offered.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "list_orders",
        description: "List the store's orders, newest first, optionally with one status.",
        permission: Permission::OrdersRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "status": {"type": "string", "enum": ["pending", "paid", "fulfilled", "shipped",
                           "delivered", "cancelled", "partially_refunded", "refunded"]},
                "limit": limit_param()}})
        },
    },
    Tool {
        name: "get_order",
        description: "One order with its items, payments and allowed status transitions.",
        permission: Permission::OrdersRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "required": ["order_id"],
                   "properties": {"order_id": {"type": "string", "format": "uuid"}}})
        },
    },
    Tool {
        name: "search_products",
        description: "Find products (with their variants, SKUs and prices in cents) by words in the title.",
        permission: Permission::ProductsRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "query": {"type": "string"}, "limit": limit_param()}})
        },
    },
    Tool {
        name: "list_customers",
        description: "Find customers by name, e-mail or phone, newest first.",
        permission: Permission::CustomersRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "search": {"type": "string"}, "limit": limit_param()}})
        },
    },
    Tool {
        name: "stock_levels",
        description: "Stock of the store's variants by SKU: on hand, reserved, available; low_only for those at or under their threshold.",
        permission: Permission::InventoryRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "low_only": {"type": "boolean"}, "limit": limit_param()}})
        },
    },
    Tool {
        name: "list_reviews",
        description: "Product reviews, newest first, optionally with one status.",
        permission: Permission::ReviewsRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "status": {"type": "string", "enum": ["pending", "approved", "rejected"]},
                "limit": limit_param()}})
        },
    },
    Tool {
        name: "list_conversations",
        description: "Inbox conversations with customers, most recent activity first.",
        permission: Permission::ConversationsRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "status": {"type": "string", "enum": ["open", "pending", "resolved", "snoozed"]},
                "limit": limit_param()}})
        },
    },
    Tool {
        name: "sales_summary",
        description: "Orders and revenue (in cents) of the last `days` days (default 30).",
        permission: Permission::OrdersRead,
        kind: Kind::Read,
        parameters: || {
            json!({"type": "object", "properties": {
                "days": {"type": "integer", "minimum": 1, "maximum": 366}}})
        },
    },
    Tool {
        name: "change_price",
        description: "Propose a new price for one variant (in cents). The user must approve it.",
        permission: Permission::ProductsWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["variant_id", "price_cents"], "properties": {
                "variant_id": {"type": "string", "format": "uuid"},
                "price_cents": {"type": "integer", "minimum": 0}}})
        },
    },
    Tool {
        name: "change_order_status",
        description: "Propose moving an order to another status (one of its allowed_status_transitions). The user must approve it.",
        permission: Permission::OrdersWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["order_id", "status"], "properties": {
                "order_id": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": ["paid", "fulfilled", "shipped", "delivered", "cancelled"]}}})
        },
    },
    Tool {
        name: "adjust_stock",
        description: "Propose adding (positive delta) or taking (negative) units of a variant's stock. The user must approve it.",
        permission: Permission::InventoryWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["variant_id", "delta", "reason"], "properties": {
                "variant_id": {"type": "string", "format": "uuid"},
                "delta": {"type": "integer"}, "reason": {"type": "string"}}})
        },
    },
    Tool {
        name: "reply_to_review",
        description: "Propose the store's public reply to a review. The user must approve it.",
        permission: Permission::ReviewsWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["review_id", "reply"], "properties": {
                "review_id": {"type": "string", "format": "uuid"}, "reply": {"type": "string"}}})
        },
    },
    Tool {
        name: "reply_to_conversation",
        description: "Propose a reply to a customer in an inbox conversation. The user must approve it.",
        permission: Permission::ConversationsWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["conversation_id", "text"], "properties": {
                "conversation_id": {"type": "string", "format": "uuid"}, "text": {"type": "string"}}})
        },
    },
    Tool {
        name: "refund_order",
        description: "Propose refunding part or all of an order's payment (amount in cents). The user must approve it.",
        permission: Permission::OrdersRefund,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["order_id", "amount_cents"], "properties": {
                "order_id": {"type": "string", "format": "uuid"},
                "amount_cents": {"type": "integer", "minimum": 1},
                "reason": {"type": "string"}}})
        },
    },
    Tool {
        name: "save_brand_system",
        description: "Propose a new version of the store's brand system: the whole `system` object, as GET brand-system shows it. The user must approve it.",
        permission: Permission::BrandWrite,
        kind: Kind::Write,
        parameters: || {
            json!({"type": "object", "required": ["system"], "properties": {
                "system": {"type": "object"}, "prompt": {"type": "string"},
                "summary": {"type": "string"}}})
        },
    },
];

pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The tools offered to a caller with `permissions`, in the OpenAI `tools` shape.
pub fn offered(permissions: &PermissionSet) -> Vec<Value> {
    TOOLS
        .iter()
        .filter(|t| permissions.contains(t.permission))
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": (t.parameters)()}})
        })
        .collect()
}

/// A tool's arguments, or what the model should be told is wrong with them.
fn args<T: DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("bad arguments: {e}"))
}

fn limit(l: Option<i64>) -> i64 {
    l.unwrap_or(10).clamp(1, 20)
}

/// Rows stored rendered, as one JSON array.
fn rendered(rows: RenderedRows) -> Result<Value, AppError> {
    let (mut body, _) = rows.finish();
    body.extend_from_slice(b"]}");
    let page: Value = serde_json::from_slice(&body).map_err(AppError::internal)?;
    Ok(page["data"].clone())
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, AppError> {
    serde_json::to_value(v).map_err(AppError::internal)
}

#[derive(Deserialize)]
struct ListArgs {
    status: Option<String>,
    search: Option<String>,
    query: Option<String>,
    low_only: Option<bool>,
    limit: Option<i64>,
    days: Option<i64>,
}

#[derive(Deserialize)]
struct OrderArg {
    order_id: OrderId,
}

/// Runs a read tool. `Err(Ok(text))` is a mistake the model is told about; `Err(Err(e))` a
/// fault of ours.
pub fn run_read(
    c: &Connection,
    store: StoreId,
    name: &str,
    arguments: &Value,
    now: DateTime<Utc>,
) -> Result<Result<Value, String>, AppError> {
    if name == "get_order" {
        let a: OrderArg = match args(arguments) {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        return Ok(
            match crate::orders::store::get_rendered(c, store, a.order_id)? {
                Some(o) => Ok(serde_json::from_str(&o.0).map_err(AppError::internal)?),
                None => Err("no such order in this store".into()),
            },
        );
    }
    let a: ListArgs = match args(arguments) {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    let n = limit(a.limit);
    let value = match name {
        "list_orders" => {
            let status = match a
                .status
                .as_deref()
                .map(crate::orders::model::OrderStatus::parse)
            {
                Some(None) => return Ok(Err("unknown order status".into())),
                Some(s) => s,
                None => None,
            };
            let mut rows = RenderedRows::new(usize::try_from(n).unwrap_or(10));
            crate::orders::store::list(c, store, status, None, None, &mut rows, 0)?;
            rendered(rows)?
        }
        "search_products" => {
            let q = crate::catalog::store::ProductQuery {
                search: a.query.filter(|q| !q.trim().is_empty()),
                ..Default::default()
            };
            let sort = crate::catalog::store::Sort {
                column: "created_at",
                descending: true,
            };
            to_value(&crate::catalog::store::list_products(
                c, store, &q, sort, None, n, 0,
            )?)?
        }
        "list_customers" => to_value(&crate::customers::store::list(
            c,
            store,
            a.search.as_deref().filter(|s| !s.trim().is_empty()),
            None,
            n,
            0,
        )?)?,
        "stock_levels" => to_value(&crate::inventory::store::list(
            c,
            store,
            None,
            a.low_only.filter(|l| *l),
            None,
            n,
            0,
        )?)?,
        "list_reviews" => {
            let status = match a.status.map(|s| {
                serde_json::from_value::<crate::reviews::model::ReviewStatus>(Value::String(s)).ok()
            }) {
                Some(None) => return Ok(Err("unknown review status".into())),
                Some(s) => s,
                None => None,
            };
            let mut rows = RenderedRows::new(usize::try_from(n).unwrap_or(10));
            crate::reviews::store::list(c, store, status, None, None, &mut rows, 0)?;
            rendered(rows)?
        }
        "list_conversations" => {
            let status = match a
                .status
                .as_deref()
                .map(crate::inbox::model::ConversationStatus::parse)
            {
                Some(None) => return Ok(Err("unknown conversation status".into())),
                Some(s) => s,
                None => None,
            };
            let q = crate::inbox::store::InboxQuery {
                search: None,
                channel_kind: None,
                status,
                priority: None,
                assignee: None,
                sort: crate::inbox::model::ConversationSort::NewestActivity,
            };
            let rows = crate::inbox::store::list_rows(c, store, &q, None, n, 0)?;
            to_value(&rows.into_iter().map(|(r, _)| r).collect::<Vec<_>>())?
        }
        "sales_summary" => {
            let days = a.days.unwrap_or(30).clamp(1, 366);
            to_value(&crate::orders::summary::sales_since(
                c,
                store,
                now - chrono::Duration::days(days),
            )?)?
        }
        _ => return Ok(Err(format!("{name} is not a read tool"))),
    };
    Ok(Ok(value))
}

/// A write tool's call, checked against the store and put in words for the user.
pub struct Prepared {
    /// The arguments as they will be applied (typed and checked).
    pub arguments: Value,
    pub summary: String,
    pub risk: Risk,
}

/// Text from the store's data (written partly by customers) as a summary quotes it: one
/// line, at most 200 characters, so it cannot pass itself off as the summary's own words.
fn quoted(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    one_line.trim().to_owned()
}

fn money(cents: i64, currency: &str) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{currency} {sign}{}.{:02}", c / 100, c % 100)
}

#[derive(Deserialize)]
struct PriceArgs {
    variant_id: VariantId,
    price_cents: i64,
}

#[derive(Deserialize)]
struct StatusArgs {
    order_id: OrderId,
    status: crate::orders::model::OrderStatus,
}

#[derive(Deserialize)]
struct StockArgs {
    variant_id: VariantId,
    delta: i64,
    reason: String,
}

#[derive(Deserialize)]
struct ReviewReplyArgs {
    review_id: ReviewId,
    reply: String,
}

#[derive(Deserialize)]
struct ConversationReplyArgs {
    conversation_id: ConversationId,
    text: String,
}

#[derive(Deserialize)]
struct RefundArgs {
    order_id: OrderId,
    amount_cents: i64,
    reason: Option<String>,
}

/// The variant's product and its current price.
fn variant(
    c: &Connection,
    store: StoreId,
    id: VariantId,
) -> Result<Option<(crate::catalog::model::ProductOut, i64)>, AppError> {
    let Some(level) = crate::inventory::store::get(c, store, id)? else {
        return Ok(None);
    };
    let Some(p) = crate::catalog::store::get_product(c, store, level.product_id)? else {
        return Ok(None);
    };
    let price = p
        .variants
        .iter()
        .find(|v| v.id == id)
        .map(|v| v.price_cents);
    Ok(price.map(|price| (p, price)))
}

/// Checks a write tool's call and describes it; `Err(Ok(text))` tells the model what is
/// wrong, nothing is proposed.
pub fn prepare(
    c: &Connection,
    store: StoreId,
    name: &str,
    arguments: &Value,
) -> Result<Result<Prepared, String>, AppError> {
    let currency = crate::orders::store::currency(c, store)?;
    macro_rules! parse {
        ($t:ty) => {
            match args::<$t>(arguments) {
                Ok(a) => a,
                Err(e) => return Ok(Err(e)),
            }
        };
    }
    let prepared = match name {
        "change_price" => {
            let a = parse!(PriceArgs);
            let Some((p, old)) = variant(c, store, a.variant_id)? else {
                return Ok(Err("no such variant in this store".into()));
            };
            if a.price_cents < 0 {
                return Ok(Err("a price cannot be negative".into()));
            }
            let v = p.variants.iter().find(|v| v.id == a.variant_id);
            Prepared {
                arguments: json!({"variant_id": a.variant_id, "price_cents": a.price_cents}),
                summary: format!(
                    "Change the price of {} ({}, SKU {}) from {} to {}",
                    quoted(&p.title),
                    quoted(v.map_or("", |v| v.title.as_str())),
                    quoted(v.map_or("", |v| v.sku.as_str())),
                    money(old, &currency),
                    money(a.price_cents, &currency)
                ),
                // What customers pay: a price is money.
                risk: Risk::Money,
            }
        }
        "change_order_status" => {
            let a = parse!(StatusArgs);
            let Some(o) = crate::orders::store::load(c, store, a.order_id)? else {
                return Ok(Err("no such order in this store".into()));
            };
            if !o.status.allowed_next().contains(&a.status) {
                return Ok(Err(format!(
                    "order #{} is {} and can move only to: {:?}",
                    o.number,
                    o.status.as_str(),
                    o.status
                        .allowed_next()
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                )));
            }
            use crate::orders::model::OrderStatus as S;
            Prepared {
                arguments: json!({"order_id": a.order_id, "status": a.status}),
                summary: format!(
                    "Move order #{} from {} to {}",
                    o.number,
                    o.status.as_str(),
                    a.status.as_str()
                ),
                // The lifecycle moves forward only: none of these can be taken back.
                risk: if a.status == S::Paid {
                    Risk::Money
                } else {
                    Risk::Destructive
                },
            }
        }
        "adjust_stock" => {
            let a = parse!(StockArgs);
            let Some(level) = crate::inventory::store::get(c, store, a.variant_id)? else {
                return Ok(Err("no such variant in this store".into()));
            };
            if a.delta == 0 {
                return Ok(Err("delta must not be 0".into()));
            }
            Prepared {
                arguments: json!({"variant_id": a.variant_id, "delta": a.delta, "reason": a.reason}),
                summary: format!(
                    "{} {} unit(s) {} SKU {} (on hand now {}): {}",
                    if a.delta > 0 { "Add" } else { "Take" },
                    a.delta.unsigned_abs(),
                    if a.delta > 0 { "to" } else { "from" },
                    quoted(&level.sku),
                    level.on_hand,
                    quoted(&a.reason)
                ),
                // Taking stock off hand may leave orders short.
                risk: if a.delta < 0 {
                    Risk::Destructive
                } else {
                    Risk::None
                },
            }
        }
        "reply_to_review" => {
            let a = parse!(ReviewReplyArgs);
            let Some(r) = crate::reviews::store::get_rendered(c, store, a.review_id)? else {
                return Ok(Err("no such review in this store".into()));
            };
            let r: Value = serde_json::from_str(&r.0).map_err(AppError::internal)?;
            Prepared {
                arguments: json!({"review_id": a.review_id, "reply": a.reply}),
                summary: format!(
                    "Reply publicly to {}'s review of {}: \"{}\"",
                    quoted(r["author_name"].as_str().unwrap_or("a customer")),
                    quoted(r["product_title"].as_str().unwrap_or("a product")),
                    quoted(&a.reply)
                ),
                risk: Risk::External,
            }
        }
        "reply_to_conversation" => {
            let a = parse!(ConversationReplyArgs);
            let Some(conv) = crate::inbox::store::get_row(c, store, a.conversation_id)? else {
                return Ok(Err("no such conversation in this store".into()));
            };
            Prepared {
                arguments: json!({"conversation_id": a.conversation_id, "text": a.text}),
                summary: format!(
                    "Send {} this message: \"{}\"",
                    quoted(&conv.display_name),
                    quoted(&a.text)
                ),
                risk: Risk::External,
            }
        }
        "refund_order" => {
            let a = parse!(RefundArgs);
            let Some(o) = crate::orders::store::load(c, store, a.order_id)? else {
                return Ok(Err("no such order in this store".into()));
            };
            Prepared {
                arguments: json!({"order_id": a.order_id, "amount_cents": a.amount_cents,
                                  "reason": a.reason}),
                summary: format!(
                    "Refund {} of order #{} (total {})",
                    money(a.amount_cents, &o.currency),
                    o.number,
                    money(o.total_cents, &o.currency)
                ),
                risk: Risk::Money,
            }
        }
        "save_brand_system" => {
            let a = parse!(crate::brand::model::BrandSystemIn);
            if let Err(e) = crate::brand::system::check(&a.system) {
                return Ok(Err(format!("invalid brand system: {}", json!(e.details))));
            }
            Prepared {
                arguments: to_value(&a)?,
                summary: format!(
                    "Save a new version of the brand system of {}{}",
                    quoted(&a.system.identity.name),
                    a.summary
                        .as_deref()
                        .map(|s| format!(": {}", quoted(s)))
                        .unwrap_or_default()
                ),
                // Every version is kept: an older one can be restored.
                risk: Risk::None,
            }
        }
        _ => return Ok(Err(format!("{name} is not a write tool"))),
    };
    Ok(Ok(prepared))
}

/// What an approved write changes, and how to take it back (None: it cannot be).
#[derive(Clone)]
pub struct Planned {
    pub resource_type: &'static str,
    pub resource_id: String,
    pub undo: Option<Value>,
}

/// What an approved write did.
pub struct Applied {
    pub result: Value,
    pub planned: Planned,
    /// Whether the area's write recorded its own audit entry.
    pub audited: bool,
}

/// Runs an approved write through its area's write path, as `actor` (the approving user,
/// via the assistant). Where the change is known beforehand, `record` gives the work that
/// must commit with it (the action's record), run in the write's own transaction; the
/// caller records the others once they return. `key` makes a retried refund the same refund
/// at the provider.
pub async fn apply(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    tool: &str,
    arguments: &Value,
    key: String,
    record: &(dyn Fn(&Planned) -> OnRecord + Sync),
) -> Result<Applied, AppError> {
    let bad = |e: String| AppError::bad_request(e);
    let with = |planned: &Planned| actor.clone().on_record(record(planned));
    match tool {
        "change_price" => {
            let a: PriceArgs = args(arguments).map_err(bad)?;
            let (product, old) = price_patch(st, store, a.variant_id, a.price_cents).await?;
            let planned = Planned {
                resource_type: "product",
                resource_id: product.0.to_string(),
                undo: Some(json!({"variant_id": a.variant_id, "price_cents": old})),
            };
            let out = crate::catalog::writes::update_product(
                st,
                &with(&planned),
                store,
                product.0,
                product.1,
            )
            .await?;
            Ok(Applied {
                result: to_value(&out)?,
                planned,
                audited: true,
            })
        }
        "change_order_status" => {
            let a: StatusArgs = args(arguments).map_err(bad)?;
            let patch = crate::orders::model::OrderPatch {
                status: Some(a.status),
                note: None,
            };
            let planned = Planned {
                resource_type: "order",
                resource_id: a.order_id.to_string(),
                undo: None,
            };
            let out =
                crate::orders::writes::update_order(st, &with(&planned), store, a.order_id, patch)
                    .await?;
            Ok(Applied {
                result: to_value(&out)?,
                planned,
                audited: true,
            })
        }
        "adjust_stock" => {
            let a: StockArgs = args(arguments).map_err(bad)?;
            let input = crate::inventory::model::AdjustmentIn {
                delta: a.delta,
                reason: a.reason.clone(),
            };
            let planned = Planned {
                resource_type: "variant",
                resource_id: a.variant_id.to_string(),
                undo: Some(json!({"variant_id": a.variant_id, "delta": -a.delta,
                                  "reason": format!("Undo: {}", a.reason)})),
            };
            let out = crate::inventory::writes::adjust_stock(
                st,
                &with(&planned),
                store,
                a.variant_id,
                input,
            )
            .await?;
            Ok(Applied {
                result: to_value(&out)?,
                planned,
                audited: true,
            })
        }
        "reply_to_review" => {
            let a: ReviewReplyArgs = args(arguments).map_err(bad)?;
            let before = review(st, store, a.review_id).await?;
            let patch = crate::reviews::model::ReviewPatch {
                status: before.0,
                reply: Some(Some(a.reply)),
            };
            let planned = Planned {
                resource_type: "review",
                resource_id: a.review_id.to_string(),
                undo: Some(json!({"review_id": a.review_id, "reply": before.1})),
            };
            let out = crate::reviews::writes::update_review(
                st,
                &with(&planned),
                store,
                a.review_id,
                patch,
            )
            .await?;
            Ok(Applied {
                result: to_value(&out)?,
                planned,
                audited: true,
            })
        }
        "save_brand_system" => {
            let a: crate::brand::model::BrandSystemIn = args(arguments).map_err(bad)?;
            let planned = Planned {
                resource_type: "brand_system",
                resource_id: store.to_string(),
                // Restoring the version before is the way back (a new version again).
                undo: None,
            };
            let out = crate::brand::writes::save(st, &with(&planned), store, a).await?;
            Ok(Applied {
                result: json!({"version": out.version, "system": out.system}),
                planned,
                audited: true,
            })
        }
        // The message's and the refund's ids are known only once written: recorded after.
        "reply_to_conversation" => {
            let a: ConversationReplyArgs = args(arguments).map_err(bad)?;
            let sent =
                crate::inbox::writes::send_agent_text(st, actor, store, a.conversation_id, a.text)
                    .await?;
            Ok(Applied {
                result: to_value(&sent.message)?,
                planned: Planned {
                    resource_type: "message",
                    resource_id: sent.message.id.to_string(),
                    undo: None,
                },
                audited: false,
            })
        }
        "refund_order" => {
            let a: RefundArgs = args(arguments).map_err(bad)?;
            let input = crate::orders::model::RefundIn {
                amount_cents: a.amount_cents,
                reason: a.reason,
            };
            let out = crate::orders::writes::refund(st, actor, store, a.order_id, input, Some(key))
                .await?;
            let refund = out.refund();
            Ok(Applied {
                result: to_value(refund)?,
                planned: Planned {
                    resource_type: "refund",
                    resource_id: refund.id.to_string(),
                    undo: None,
                },
                audited: true,
            })
        }
        _ => Err(AppError::bad_request(format!("{tool} is not a write tool"))),
    }
}

/// Takes back an applied write through the same write path, as `actor`.
/// A value changed since the action set it: putting the old one back would overwrite
/// someone's later change.
fn changed_since(what: &str) -> AppError {
    AppError::conflict(
        crate::error::ErrorCode::Conflict,
        format!("the {what} was changed since; undoing would overwrite that change"),
    )
}

pub async fn undo(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    (tool, applied): (&str, &Value),
    undo: &Value,
) -> Result<(), AppError> {
    let bad = |e: String| AppError::internal(anyhow::anyhow!("stored undo: {e}"));
    match tool {
        "change_price" => {
            let a: PriceArgs = args(undo).map_err(bad)?;
            let set: PriceArgs = args(applied).map_err(bad)?;
            let (product, now) = price_patch(st, store, a.variant_id, a.price_cents).await?;
            if now != set.price_cents {
                return Err(changed_since("price"));
            }
            crate::catalog::writes::update_product(st, actor, store, product.0, product.1).await?;
        }
        "adjust_stock" => {
            let a: StockArgs = args(undo).map_err(bad)?;
            let input = crate::inventory::model::AdjustmentIn {
                delta: a.delta,
                reason: a.reason,
            };
            crate::inventory::writes::adjust_stock(st, actor, store, a.variant_id, input).await?;
        }
        "reply_to_review" => {
            #[derive(Deserialize)]
            struct Back {
                review_id: ReviewId,
                reply: Option<String>,
            }
            let a: Back = args(undo).map_err(bad)?;
            let set: ReviewReplyArgs = args(applied).map_err(bad)?;
            let before = review(st, store, a.review_id).await?;
            if before.1.as_deref() != Some(set.reply.trim()) {
                return Err(changed_since("reply"));
            }
            let patch = crate::reviews::model::ReviewPatch {
                status: before.0,
                reply: Some(a.reply),
            };
            crate::reviews::writes::update_review(st, actor, store, a.review_id, patch).await?;
        }
        _ => {
            return Err(AppError::new(
                crate::error::ErrorCode::UndoNotSupported,
                "this action cannot be undone",
            ));
        }
    }
    Ok(())
}

/// The product patch that sets one variant's price, keeping every other variant as it is;
/// with the variant's price before.
async fn price_patch(
    st: &AppState,
    store: StoreId,
    variant: VariantId,
    price: i64,
) -> Result<((ProductId, crate::catalog::model::ProductPatch), i64), AppError> {
    let (product, old) = st
        .db
        .read(move |c| self::variant(c, store, variant))
        .await?
        .ok_or_else(|| AppError::not_found("variant"))?;
    let variants = product
        .variants
        .iter()
        .map(|v| crate::catalog::model::VariantIn {
            id: Some(v.id),
            sku: v.sku.clone(),
            price_cents: if v.id == variant {
                price
            } else {
                v.price_cents
            },
            title: Some(v.title.clone()),
            compare_at_price_cents: v.compare_at_price_cents,
            weight_grams: v.weight_grams,
            on_hand: None,
            low_stock_threshold: None,
        })
        .collect();
    let patch = crate::catalog::model::ProductPatch {
        variants: Some(variants),
        ..Default::default()
    };
    Ok(((product.id, patch), old))
}

/// A review's status and reply as they are now.
async fn review(
    st: &AppState,
    store: StoreId,
    id: ReviewId,
) -> Result<(crate::reviews::model::ReviewStatus, Option<String>), AppError> {
    let r = st
        .db
        .read(move |c| crate::reviews::store::get_rendered(c, store, id))
        .await?
        .ok_or_else(|| AppError::not_found("review"))?;
    let r: Value = serde_json::from_str(&r.0).map_err(AppError::internal)?;
    let status = serde_json::from_value::<crate::reviews::model::ReviewStatus>(r["status"].clone())
        .ok()
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("a stored review has no status")))?;
    Ok((status, r["reply"].as_str().map(str::to_owned)))
}
