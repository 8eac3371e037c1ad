//! SQL of the inbox; every query is scoped by store (or by a conversation found in one).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{
    ChannelKind, ChannelOut, Contact, ConversationCounts, ConversationOut, ConversationSort,
    ConversationStatus, DeliveryStatus, InboxRow, MessageOut, NoteOut, Priority, Sender,
};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{ChannelId, ConversationId, MessageId, NoteId, StoreId, UserId};
use crate::time;

// ---- channels ---------------------------------------------------------------------------

const CHANNEL_COLUMNS: &str =
    "id, store_id, kind, name, key, enabled, allowed_origins, settings, created_at, updated_at";

fn channel_row(r: &Row<'_>) -> rusqlite::Result<ChannelOut> {
    Ok(ChannelOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        kind: r.get(2)?,
        name: r.get(3)?,
        key: r.get(4)?,
        enabled: r.get(5)?,
        allowed_origins: crate::db::json_column(r, 6)?,
        settings: crate::db::json_column(r, 7)?,
        created_at: r.get(8)?,
        updated_at: r.get(9)?,
    })
}

/// A channel as stored: what it shows, and its sealed secrets.
pub struct NewChannel<'a> {
    pub id: ChannelId,
    pub store: StoreId,
    pub kind: ChannelKind,
    pub name: &'a str,
    pub key: Option<&'a str>,
    pub allowed_origins: &'a [String],
    pub settings: &'a serde_json::Map<String, serde_json::Value>,
    pub secrets: Option<&'a [u8]>,
}

pub fn insert_channel(tx: &Tx<'_>, c: &NewChannel<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO channels (id, store_id, kind, name, key, allowed_origins, settings, secrets,
                               created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
        params![
            c.id,
            c.store,
            c.kind,
            c.name,
            c.key,
            json(c.allowed_origins)?,
            json(c.settings)?,
            c.secrets,
            now
        ],
    )?;
    Ok(())
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String, AppError> {
    serde_json::to_string(v).map_err(AppError::internal)
}

pub fn get_channel(
    c: &Connection,
    store: StoreId,
    id: ChannelId,
) -> Result<Option<ChannelOut>, AppError> {
    let sql = format!("SELECT {CHANNEL_COLUMNS} FROM channels WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], channel_row)
        .optional()?)
}

/// The store's oldest enabled channel of `kind`: where a message the store starts (a
/// workflow's step) goes out from.
pub fn first_enabled_channel(
    c: &Connection,
    store: StoreId,
    kind: super::model::ChannelKind,
) -> Result<Option<ChannelOut>, AppError> {
    let sql = format!(
        "SELECT {CHANNEL_COLUMNS} FROM channels WHERE store_id = ?1 AND kind = ?2 AND enabled = 1
         ORDER BY created_at, id LIMIT 1"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, kind.as_str()], channel_row)
        .optional()?)
}

/// The channel a widget names by its public key, whatever its store.
pub fn channel_by_key(c: &Connection, key: &str) -> Result<Option<ChannelOut>, AppError> {
    let sql = format!("SELECT {CHANNEL_COLUMNS} FROM channels WHERE key = ?1");
    Ok(c.prepare_cached(&sql)?
        .query_row([key], channel_row)
        .optional()?)
}

/// The channel a provider's webhook names by its id in the path, whatever its store.
pub fn channel_by_id_unscoped(
    c: &Connection,
    id: ChannelId,
) -> Result<Option<ChannelOut>, AppError> {
    let sql = format!("SELECT {CHANNEL_COLUMNS} FROM channels WHERE id = ?1");
    Ok(c.prepare_cached(&sql)?
        .query_row([id], channel_row)
        .optional()?)
}

/// A channel's sealed secrets, if it has any.
pub fn channel_secrets(
    c: &Connection,
    store: StoreId,
    id: ChannelId,
) -> Result<Option<Vec<u8>>, AppError> {
    Ok(
        c.prepare_cached("SELECT secrets FROM channels WHERE store_id = ?1 AND id = ?2")?
            .query_row(params![store, id], |r| r.get(0))
            .optional()?
            .flatten(),
    )
}

pub fn list_channels(
    c: &Connection,
    store: StoreId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<ChannelOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {CHANNEL_COLUMNS} FROM channels WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, at, id, offset], channel_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_channels(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM channels WHERE store_id = ?1")?
            .query_row([store], |r| r.get(0))?,
    )
}

/// The fields an update sets; None keeps a field.
#[derive(Default)]
pub struct ChannelChange {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub allowed_origins: Option<Vec<String>>,
    pub settings: Option<serde_json::Map<String, serde_json::Value>>,
    pub secrets: Option<Vec<u8>>,
}

/// False when the store has no such channel.
pub fn update_channel(
    tx: &Tx<'_>,
    store: StoreId,
    id: ChannelId,
    ch: &ChannelChange,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let origins = ch.allowed_origins.as_ref().map(json).transpose()?;
    let settings = ch.settings.as_ref().map(json).transpose()?;
    let n = crate::db::exec(
        tx,
        "UPDATE channels SET name = COALESCE(?3, name), enabled = COALESCE(?4, enabled),
                allowed_origins = COALESCE(?5, allowed_origins),
                settings = COALESCE(?6, settings), secrets = COALESCE(?7, secrets),
                updated_at = ?8
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            ch.name,
            ch.enabled,
            origins,
            settings,
            ch.secrets,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// Deletes the channel and its conversations; false when the store has no such channel.
pub fn delete_channel(tx: &Tx<'_>, store: StoreId, id: ChannelId) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "DELETE FROM channels WHERE store_id = ?1 AND id = ?2",
        params![store, id],
    )?;
    Ok(n == 1)
}

// ---- conversations ----------------------------------------------------------------------

const CONVERSATION_COLUMNS: &str = "c.id, c.store_id, c.channel_id, c.channel_kind, c.status,
    c.priority, c.assignee_user_id, c.labels, c.bot_active, c.unread_for_agents,
    c.unread_for_visitor, c.contact_name, c.contact_email, c.contact_phone, c.customer_id,
    c.last_message_at, c.reply_window_expires_at, c.snoozed_until, c.created_at, c.updated_at";

/// The inbox row's extra columns, after [`CONVERSATION_COLUMNS`].
const ROW_COLUMNS: &str = "u.email, cu.name, c.waiting_since, c.activity_at, c.priority_rank";

const ROW_FROM: &str = "conversations c
    LEFT JOIN users u ON u.id = c.assignee_user_id
    LEFT JOIN customers cu ON cu.id = c.customer_id";

fn conversation_row(r: &Row<'_>) -> rusqlite::Result<ConversationOut> {
    Ok(ConversationOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        channel_id: r.get(2)?,
        channel_kind: r.get(3)?,
        status: r.get(4)?,
        priority: r.get(5)?,
        assignee_user_id: r.get(6)?,
        labels: crate::db::json_column(r, 7)?,
        bot_active: r.get(8)?,
        unread_for_agents: r.get(9)?,
        unread_for_visitor: r.get(10)?,
        contact: Contact {
            name: r.get(11)?,
            email: r.get(12)?,
            phone: r.get(13)?,
        },
        customer_id: r.get(14)?,
        last_message_at: r.get(15)?,
        reply_window_expires_at: r.get(16)?,
        snoozed_until: r.get(17)?,
        created_at: r.get(18)?,
        updated_at: r.get(19)?,
    })
}

/// An inbox row, with the keys its list orders by: (activity_at, priority_rank).
fn inbox_row(r: &Row<'_>) -> rusqlite::Result<(InboxRow, String, i64)> {
    let conversation = conversation_row(r)?;
    let display_name = display_name(&conversation.contact);
    Ok((
        InboxRow {
            conversation,
            display_name,
            assignee_name: r.get(20)?,
            customer_name: r.get(21)?,
            waiting_since: r.get(22)?,
        },
        r.get(23)?,
        r.get(24)?,
    ))
}

/// The name the inbox shows for a contact.
pub fn display_name(c: &Contact) -> String {
    [&c.name, &c.email, &c.phone]
        .into_iter()
        .flatten()
        .find(|s| !s.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| "Visitor".to_owned())
}

pub struct NewConversation<'a> {
    pub id: ConversationId,
    pub store: StoreId,
    pub channel: ChannelId,
    pub kind: ChannelKind,
    pub contact: &'a Contact,
    pub visitor_token_hash: Option<&'a [u8]>,
}

/// Creates an open conversation, linked to the store's customer with the contact's e-mail or
/// phone when there is one. A widget contact typed their e-mail themselves: it is not proof,
/// so chat conversations are never linked (that would show an impostor as the customer and
/// tell a stranger who is one).
pub fn insert_conversation(
    tx: &Tx<'_>,
    n: &NewConversation<'_>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let customer: Option<String> = if n.kind == ChannelKind::StorefrontChat {
        None
    } else {
        tx.prepare_cached(
            "SELECT id FROM customers WHERE store_id = ?1
               AND ((?2 IS NOT NULL AND email = ?2) OR (?3 IS NOT NULL AND phone = ?3))
             ORDER BY created_at LIMIT 1",
        )?
        .query_row(params![n.store, n.contact.email, n.contact.phone], |r| {
            r.get(0)
        })
        .optional()?
    };
    let search = [&n.contact.name, &n.contact.email, &n.contact.phone]
        .into_iter()
        .flatten()
        .map(|s| s.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO conversations (id, store_id, channel_id, channel_kind, contact_name,
             contact_email, contact_phone, contact_search, customer_id, visitor_token_hash,
             activity_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?11)",
        params![
            n.id,
            n.store,
            n.channel,
            n.kind,
            n.contact.name,
            n.contact.email,
            n.contact.phone,
            search,
            customer,
            n.visitor_token_hash,
            now
        ],
    )?;
    Ok(())
}

pub fn get_row(
    c: &Connection,
    store: StoreId,
    id: ConversationId,
) -> Result<Option<InboxRow>, AppError> {
    let sql = format!(
        "SELECT {CONVERSATION_COLUMNS}, {ROW_COLUMNS} FROM {ROW_FROM}
         WHERE c.store_id = ?1 AND c.id = ?2"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], inbox_row)
        .optional()?
        .map(|(row, ..)| row))
}

/// The visitor token hash of a conversation of `channel` (None: no such conversation;
/// `Some(None)`: it has no visitor token).
pub fn visitor_token_hash(
    c: &Connection,
    store: StoreId,
    channel: ChannelId,
    id: ConversationId,
) -> Result<Option<Option<Vec<u8>>>, AppError> {
    Ok(c.prepare_cached(
        "SELECT visitor_token_hash FROM conversations
         WHERE store_id = ?1 AND channel_id = ?2 AND id = ?3",
    )?
    .query_row(params![store, channel, id], |r| r.get(0))
    .optional()?)
}

pub fn get_conversation(
    c: &Connection,
    store: StoreId,
    id: ConversationId,
) -> Result<Option<ConversationOut>, AppError> {
    let sql = format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.store_id = ?1 AND c.id = ?2"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], conversation_row)
        .optional()?)
}

/// The inbox list's filters, checked.
#[derive(Debug, Clone)]
pub struct InboxQuery {
    pub search: Option<String>,
    pub channel_kind: Option<ChannelKind>,
    pub status: Option<ConversationStatus>,
    pub priority: Option<Priority>,
    /// `Some(None)`: unassigned.
    pub assignee: Option<Option<UserId>>,
    pub sort: ConversationSort,
}

fn inbox_filter(q: &InboxQuery) -> String {
    // A conversation shows once it has a message: a widget opened and left says nothing.
    let mut sql = crate::db::where_clause(
        "c.store_id = ?1 AND c.last_message_at IS NOT NULL",
        &[
            (q.status.is_some(), "c.status = ?2", "?2"),
            (q.channel_kind.is_some(), "c.channel_kind = ?3", "?3"),
            (q.priority.is_some(), "c.priority = ?4", "?4"),
            (
                matches!(q.assignee, Some(Some(_))),
                "c.assignee_user_id = ?5",
                "?5",
            ),
            (
                q.search.is_some(),
                "(c.contact_search LIKE ?6 ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m
                   WHERE m.conversation_id = c.id AND m.text LIKE ?6 ESCAPE '\\'))",
                "?6",
            ),
        ],
    );
    if matches!(q.assignee, Some(None)) {
        sql.push_str(" AND c.assignee_user_id IS NULL");
    }
    sql
}

/// A page of inbox rows in `q.sort`'s order, after the keyset position `after`. Positions:
/// newest activity `(activity_at, id)`; oldest waiting `(waiting_since or "9999", id)`;
/// priority `("rank:activity_at", id)`.
pub fn list_rows(
    c: &Connection,
    store: StoreId,
    q: &InboxQuery,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<(InboxRow, Position)>, AppError> {
    let (order, keyset) = match q.sort {
        ConversationSort::NewestActivity => (
            "c.activity_at DESC, c.id DESC",
            "(c.activity_at, c.id) < (?7, ?9)",
        ),
        ConversationSort::OldestWaiting => (
            "COALESCE(c.waiting_since, '9999') ASC, c.id ASC",
            "(COALESCE(c.waiting_since, '9999'), c.id) > (?7, ?9)",
        ),
        ConversationSort::Priority => (
            "c.priority_rank DESC, c.activity_at DESC, c.id DESC",
            "(c.priority_rank, c.activity_at, c.id) < (?8, ?7, ?9)",
        ),
    };
    let (k1, rank, id) = match (after, q.sort) {
        (None, ConversationSort::OldestWaiting) => (String::new(), 0, String::new()),
        (None, _) => ("9999".to_owned(), 99, String::new()),
        (Some((k, id)), ConversationSort::Priority) => {
            let (rank, at) = k.split_once(':').unwrap_or(("0", k));
            (at.to_owned(), rank.parse().unwrap_or(0), id.clone())
        }
        (Some((k, id)), _) => (k.clone(), 0, id.clone()),
    };
    let sql = format!(
        "SELECT {CONVERSATION_COLUMNS}, {ROW_COLUMNS} FROM {ROW_FROM}
         WHERE {} AND {keyset} ORDER BY {order} LIMIT {limit} OFFSET ?10",
        inbox_filter(q)
    );
    let pattern = q.search.as_deref().map(crate::db::contains_pattern);
    let assignee = q.assignee.flatten();
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            store,
            q.status,
            q.channel_kind,
            q.priority,
            assignee,
            pattern,
            k1,
            rank,
            id,
            offset
        ],
        inbox_row,
    )?;
    let mut out = Vec::new();
    for r in rows {
        let (row, activity, rank) = r?;
        let id = row.conversation.id.to_string();
        let key = match q.sort {
            ConversationSort::NewestActivity => activity,
            ConversationSort::OldestWaiting => row
                .waiting_since
                .clone()
                .unwrap_or_else(|| "9999".to_owned()),
            ConversationSort::Priority => format!("{rank}:{activity}"),
        };
        out.push((row, (key, id)));
    }
    Ok(out)
}

/// The inbox's total: a kept count (`list_counts`) with no filter or one of status, channel
/// kind, priority and assignee; a capped count with a search or two filters.
pub fn count_rows(c: &Connection, store: StoreId, q: &InboxQuery) -> Result<i64, AppError> {
    let filters: Vec<(&str, String)> = [
        q.status.map(|s| ("status", s.as_str().to_owned())),
        q.channel_kind
            .map(|k| ("channel_kind", k.as_str().to_owned())),
        q.priority.map(|p| ("priority", p.as_str().to_owned())),
        q.assignee.map(|a| {
            let id = a.map(|u| u.to_string()).unwrap_or_default();
            ("assignee_user_id", id)
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if q.search.is_none() && filters.len() <= 1 {
        let one = filters
            .first()
            .map(|(column, value)| (*column, value.as_str()));
        return crate::db::counts::get(c, store, "conversations", &crate::db::counts::key(one));
    }
    let sql = format!("SELECT 1 FROM conversations c WHERE {}", inbox_filter(q));
    let pattern = q.search.as_deref().map(crate::db::contains_pattern);
    crate::db::counts::capped(
        c,
        &sql,
        params![
            store,
            q.status,
            q.channel_kind,
            q.priority,
            q.assignee.flatten(),
            pattern
        ],
    )
}

pub fn counts(c: &Connection, store: StoreId, me: UserId) -> Result<ConversationCounts, AppError> {
    Ok(c.prepare_cached(
        "SELECT COALESCE(SUM(status = 'open'), 0), COALESCE(SUM(status = 'pending'), 0),
                COALESCE(SUM(status = 'resolved'), 0), COALESCE(SUM(status = 'snoozed'), 0),
                COALESCE(SUM(status = 'open' AND assignee_user_id IS NULL), 0),
                COALESCE(SUM(status = 'open' AND assignee_user_id = ?2), 0)
         FROM conversations WHERE store_id = ?1 AND last_message_at IS NOT NULL",
    )?
    .query_row(params![store, me], |r| {
        Ok(ConversationCounts {
            open: r.get(0)?,
            pending: r.get(1)?,
            resolved: r.get(2)?,
            snoozed: r.get(3)?,
            unassigned: r.get(4)?,
            mine: r.get(5)?,
        })
    })?)
}

/// The fields a PATCH sets; None keeps a field.
#[derive(Debug, Default)]
pub struct ConversationChange {
    pub status: Option<ConversationStatus>,
    pub priority: Option<Priority>,
    pub assignee: Option<Option<UserId>>,
    pub labels: Option<Vec<String>>,
    /// Set with `status: snoozed`; any other status clears it.
    pub snoozed_until: Option<String>,
}

/// False when the store has no such conversation.
pub fn update_conversation(
    tx: &Tx<'_>,
    store: StoreId,
    id: ConversationId,
    ch: &ConversationChange,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let labels = ch.labels.as_ref().map(json).transpose()?;
    let n = crate::db::exec(
        tx,
        "UPDATE conversations SET
             status = COALESCE(?3, status),
             priority = COALESCE(?4, priority),
             priority_rank = COALESCE(?5, priority_rank),
             assignee_user_id = CASE WHEN ?6 THEN ?7 ELSE assignee_user_id END,
             labels = COALESCE(?8, labels),
             snoozed_until = CASE WHEN ?3 IS NULL THEN snoozed_until ELSE ?9 END,
             updated_at = ?10
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            ch.status,
            ch.priority,
            ch.priority.map(Priority::rank),
            ch.assignee.is_some(),
            ch.assignee.flatten(),
            labels,
            ch.snoozed_until,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// Marks the conversation read by the team (`agents`) or by the visitor: its unread count
/// drops to zero and the other side's messages get `read_at`. The messages it marked.
pub fn mark_read(
    tx: &Tx<'_>,
    store: StoreId,
    id: ConversationId,
    by_visitor: bool,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let (unread, senders) = if by_visitor {
        ("unread_for_visitor", "('agent', 'bot', 'system')")
    } else {
        ("unread_for_agents", "('visitor')")
    };
    let sql = format!("UPDATE conversations SET {unread} = 0 WHERE store_id = ?1 AND id = ?2");
    if crate::db::exec(tx, &sql, params![store, id])? == 0 {
        return Ok(false);
    }
    let sql = format!(
        "UPDATE messages SET read_at = ?2
         WHERE conversation_id = ?1 AND read_at IS NULL AND sender IN {senders}"
    );
    crate::db::exec(tx, &sql, params![id, time::format(now)])?;
    Ok(true)
}

// ---- messages ---------------------------------------------------------------------------

const MESSAGE_COLUMNS: &str = "m.id, m.conversation_id, m.store_id, m.sender, m.agent_user_id,
    m.text, m.payload, m.external_id, m.delivery_status, m.delivery_error, m.read_at,
    m.created_at, m.seq";

fn message_row(r: &Row<'_>) -> rusqlite::Result<(MessageOut, i64)> {
    Ok((
        MessageOut {
            id: r.get(0)?,
            conversation_id: r.get(1)?,
            store_id: r.get(2)?,
            sender: r.get(3)?,
            agent_user_id: r.get(4)?,
            text: r.get(5)?,
            payload: crate::db::json_column(r, 6)?,
            external_id: r.get(7)?,
            delivery_status: r.get(8)?,
            delivery_error: r.get(9)?,
            read_at: r.get(10)?,
            created_at: r.get(11)?,
            attachments: Vec::new(),
        },
        r.get(12)?,
    ))
}

pub struct NewMessage<'a> {
    pub id: MessageId,
    pub conversation: ConversationId,
    pub store: StoreId,
    pub sender: Sender,
    pub agent: Option<UserId>,
    pub text: &'a str,
    pub external_id: Option<&'a str>,
    pub delivery_status: DeliveryStatus,
}

/// Appends a message and moves its conversation along: last activity, the other side's
/// unread count, who waits since when, and a contact's message reopens a resolved or
/// snoozed conversation. False when `external_id` was stored already (a repeated delivery).
pub fn insert_message(
    tx: &Tx<'_>,
    m: &NewMessage<'_>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let at = time::format(now);
    let n = crate::db::exec(
        tx,
        "INSERT INTO messages (id, conversation_id, store_id, sender, agent_user_id, text,
                               external_id, delivery_status, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (conversation_id, external_id) WHERE external_id IS NOT NULL DO NOTHING",
        params![
            m.id,
            m.conversation,
            m.store,
            m.sender,
            m.agent,
            m.text,
            m.external_id,
            m.delivery_status,
            at
        ],
    )?;
    if n == 0 {
        return Ok(false);
    }
    if m.sender == Sender::Visitor {
        notify_if_first(tx, m, now)?;
    }
    let sql = match m.sender {
        Sender::Visitor => {
            "UPDATE conversations SET last_message_at = ?2, activity_at = ?2, updated_at = ?2,
                 unread_for_agents = unread_for_agents + 1,
                 waiting_since = COALESCE(waiting_since, ?2),
                 status = CASE WHEN status IN ('resolved', 'snoozed') THEN 'open' ELSE status END,
                 snoozed_until = CASE WHEN status IN ('resolved', 'snoozed') THEN NULL
                                      ELSE snoozed_until END
             WHERE id = ?1"
        }
        Sender::Agent | Sender::Bot => {
            "UPDATE conversations SET last_message_at = ?2, activity_at = ?2, updated_at = ?2,
                 unread_for_visitor = unread_for_visitor + 1, waiting_since = NULL
             WHERE id = ?1"
        }
        Sender::System => {
            "UPDATE conversations SET last_message_at = ?2, activity_at = ?2, updated_at = ?2
             WHERE id = ?1"
        }
    };
    crate::db::exec(tx, sql, params![m.conversation, at])?;
    Ok(true)
}

/// A conversation's first inbound message announces it to the team (as `conversation:new`
/// does on the sockets): the members who read conversations are notified, in its
/// transaction. A chat opened and never written in notifies nobody.
fn notify_if_first(tx: &Tx<'_>, m: &NewMessage<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    let first: Option<(ChannelKind, Contact)> = tx
        .prepare_cached(
            "SELECT c.channel_kind, c.contact_name, c.contact_email, c.contact_phone
             FROM conversations c
             WHERE c.id = ?1 AND NOT EXISTS (SELECT 1 FROM messages x
                                             WHERE x.conversation_id = c.id AND x.id != ?2)",
        )?
        .query_row(params![m.conversation, m.id], |r| {
            Ok((
                r.get(0)?,
                Contact {
                    name: r.get(1)?,
                    email: r.get(2)?,
                    phone: r.get(3)?,
                },
            ))
        })
        .optional()?;
    let Some((kind, contact)) = first else {
        return Ok(());
    };
    let who = display_name(&contact);
    let body = format!("{who} wrote through {}: {}", kind.as_str(), m.text);
    let id = m.conversation.to_string();
    let n = crate::notifications::produce::Notice {
        kind: crate::notifications::model::Kind::NewConversation,
        // The shopper's words stay in the body: the title is an e-mail's subject, sent from
        // the operator's address, and must not be theirs to write.
        title: "New conversation",
        body: &body,
        subject_type: "conversation",
        subject_id: &id,
    };
    crate::notifications::produce::notify(tx, m.store, &n, now).map(drop)
}

/// Whether the conversation has any message yet (its first one announces it).
pub fn message_count(c: &Connection, conversation: ConversationId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM messages WHERE conversation_id = ?1")?
            .query_row([conversation], |r| r.get(0))?,
    )
}

pub fn get_message(c: &Connection, id: MessageId) -> Result<Option<MessageOut>, AppError> {
    let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?1");
    let Some(found) = c
        .prepare_cached(&sql)?
        .query_row([id], message_row)
        .optional()?
    else {
        return Ok(None);
    };
    let mut one = [found];
    attach_files(c, &mut one)?;
    let [(m, _)] = one;
    Ok(Some(m))
}

/// Stores a message's files, numbered from 0 in the order given.
pub fn insert_attachments(
    tx: &Tx<'_>,
    message: MessageId,
    files: &[super::model::NewFile],
) -> Result<(), AppError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO message_attachments (message_id, idx, kind, name, mime_type, size, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (idx, f) in (0_i64..).zip(files) {
        let size = i64::try_from(f.data.len()).map_err(AppError::internal)?;
        stmt.execute(params![
            message,
            idx,
            f.kind(),
            f.name,
            f.mime_type,
            size,
            f.data
        ])?;
    }
    Ok(())
}

/// File `index` of `message`, when that message is in `conversation` of `store`.
pub fn attachment(
    c: &Connection,
    store: StoreId,
    conversation: ConversationId,
    message: MessageId,
    index: i64,
) -> Result<Option<super::model::StoredFile>, AppError> {
    Ok(c.prepare_cached(
        "SELECT a.name, a.mime_type, a.data
         FROM message_attachments a JOIN messages m ON m.id = a.message_id
         WHERE a.message_id = ?1 AND a.idx = ?2 AND m.conversation_id = ?3 AND m.store_id = ?4",
    )?
    .query_row(params![message, index, conversation, store], |r| {
        Ok(super::model::StoredFile {
            name: r.get(0)?,
            mime_type: r.get(1)?,
            data: r.get(2)?,
        })
    })
    .optional()?)
}

/// The commit-order position of a message of `conversation`; None when it has no such one.
pub fn message_seq(
    c: &Connection,
    conversation: ConversationId,
    id: MessageId,
) -> Result<Option<i64>, AppError> {
    Ok(
        c.prepare_cached("SELECT seq FROM messages WHERE conversation_id = ?1 AND id = ?2")?
            .query_row(params![conversation, id], |r| r.get(0))
            .optional()?,
    )
}

/// Which messages a list shows, in commit order (`seq`).
#[derive(Debug, Clone, Copy)]
pub enum MessageRange {
    /// Newest first, older than `before` when set.
    Newest { before: Option<i64> },
    /// Oldest first, newer than `after` (a seq) and created after `created_after`.
    Oldest { after: i64 },
}

/// A page of messages; the position of each is its `seq`.
pub fn list_messages(
    c: &Connection,
    conversation: ConversationId,
    range: MessageRange,
    created_after: Option<&str>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<(MessageOut, i64)>, AppError> {
    let cursor: Option<i64> = after.and_then(|(seq, _)| seq.parse().ok());
    let (cond, order, bound) = match range {
        MessageRange::Newest { before } => {
            let bound = [before, cursor]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(i64::MAX);
            ("m.seq < ?2", "m.seq DESC", bound)
        }
        MessageRange::Oldest { after } => {
            let bound = cursor.map_or(after, |c| c.max(after));
            ("m.seq > ?2", "m.seq ASC", bound)
        }
    };
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages m
         WHERE m.conversation_id = ?1 AND {cond} AND (?3 IS NULL OR m.created_at > ?3)
         ORDER BY {order} LIMIT {limit} OFFSET ?4"
    );
    let mut found: Vec<(MessageOut, i64)> = c
        .prepare_cached(&sql)?
        .query_map(
            params![conversation, bound, created_after, offset],
            message_row,
        )?
        .collect::<Result<_, _>>()?;
    attach_files(c, &mut found)?;
    Ok(found)
}

pub fn count_messages(
    c: &Connection,
    conversation: ConversationId,
    range: MessageRange,
    created_after: Option<&str>,
) -> Result<i64, AppError> {
    let (cond, bound) = match range {
        MessageRange::Newest { before } => ("seq < ?2", before.unwrap_or(i64::MAX)),
        MessageRange::Oldest { after } => ("seq > ?2", after),
    };
    let sql = format!(
        "SELECT COUNT(*) FROM messages WHERE conversation_id = ?1 AND {cond}
           AND (?3 IS NULL OR created_at > ?3)"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![conversation, bound, created_after], |r| r.get(0))?)
}

/// Fills in the messages' attachments (links are made absolute by the caller): one query
/// for the page, over the seq range it covers, not one per message.
fn attach_files(c: &Connection, messages: &mut [(MessageOut, i64)]) -> Result<(), AppError> {
    let (Some(low), Some(high)) = (
        messages.iter().map(|(_, seq)| *seq).min(),
        messages.iter().map(|(_, seq)| *seq).max(),
    ) else {
        return Ok(());
    };
    let conversation = messages[0].0.conversation_id;
    let mut stmt = c.prepare_cached(
        "SELECT a.message_id, a.idx, a.kind, a.name, a.mime_type, a.size
         FROM messages m JOIN message_attachments a ON a.message_id = m.id
         WHERE m.conversation_id = ?1 AND m.seq BETWEEN ?2 AND ?3
         ORDER BY a.message_id, a.idx",
    )?;
    let mut rows = stmt.query(params![conversation, low, high])?;
    while let Some(r) = rows.next()? {
        let id: MessageId = r.get(0)?;
        let Some((m, _)) = messages.iter_mut().find(|(m, _)| m.id == id) else {
            continue; // in the range but not on this page (skipped by the filters)
        };
        let index: i64 = r.get(1)?;
        m.attachments.push(super::model::AttachmentOut {
            index,
            kind: r.get(2)?,
            name: r.get(3)?,
            mime_type: r.get(4)?,
            size: r.get(5)?,
            url: String::new(),
            path: format!(
                "/v1/stores/{}/conversations/{}/messages/{}/attachments/{index}",
                m.store_id, m.conversation_id, m.id
            ),
        });
    }
    Ok(())
}

// ---- the messaging-app channel ------------------------------------------------------------
// A contact is its phone on a channel: these go through `conversations_by_channel`
// (channel_id, contact_phone), then `messages_by_external` per conversation.

/// The newest conversation with `phone` on `channel` that is not resolved.
pub fn unresolved_conversation_by_phone(
    c: &Connection,
    store: StoreId,
    channel: ChannelId,
    phone: &str,
) -> Result<Option<ConversationId>, AppError> {
    Ok(c.prepare_cached(
        "SELECT id FROM conversations
         WHERE store_id = ?1 AND channel_id = ?2 AND contact_phone = ?3 AND status != 'resolved'
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )?
    .query_row(params![store, channel, phone], |r| r.get(0))
    .optional()?)
}

/// The message with the provider's id `external_id` in any conversation with `phone` on
/// `channel` (resolved ones too: a repeated delivery may come after a conversation ended).
pub fn message_by_external_id(
    c: &Connection,
    store: StoreId,
    channel: ChannelId,
    phone: &str,
    external_id: &str,
) -> Result<Option<MessageOut>, AppError> {
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM conversations c
           JOIN messages m ON m.conversation_id = c.id AND m.external_id = ?4
         WHERE c.store_id = ?1 AND c.channel_id = ?2 AND c.contact_phone = ?3
         LIMIT 1"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, channel, phone, external_id], message_row)
        .optional()?
        .map(|(m, _)| m))
}

/// Keeps the reply window open until `until` at least; it never closes earlier because an
/// older message arrived late.
pub fn extend_reply_window(
    tx: &Tx<'_>,
    conversation: ConversationId,
    until: DateTime<Utc>,
) -> Result<(), AppError> {
    let until = time::format(until);
    crate::db::exec(
        tx,
        "UPDATE conversations
         SET reply_window_expires_at = MAX(COALESCE(reply_window_expires_at, ?2), ?2)
         WHERE id = ?1",
        params![conversation, until],
    )?;
    Ok(())
}

/// Records the provider's id of a message sent through it; false when it had one already
/// (or the conversation holds that id: kept unrecorded rather than failing a sent message).
pub fn set_external_id(
    tx: &Tx<'_>,
    message: MessageId,
    external_id: &str,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE OR IGNORE messages SET external_id = ?2 WHERE id = ?1 AND external_id IS NULL",
        params![message, external_id],
    )?;
    Ok(n == 1)
}

/// Sets a message's delivery status (and its error, and when the contact read it).
pub fn set_delivery(
    tx: &Tx<'_>,
    message: MessageId,
    status: DeliveryStatus,
    error: Option<&str>,
    read_at: Option<DateTime<Utc>>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE messages SET delivery_status = ?2, delivery_error = ?3,
                             read_at = COALESCE(read_at, ?4)
         WHERE id = ?1",
        params![message, status, error, read_at.map(time::format)],
    )?;
    Ok(())
}

// ---- notes ------------------------------------------------------------------------------

pub fn insert_note(tx: &Tx<'_>, store: StoreId, n: &NoteOut) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO conversation_notes (id, conversation_id, store_id, author_user_id, text,
                                         created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            n.id,
            n.conversation_id,
            store,
            n.author_user_id,
            n.text,
            n.created_at
        ],
    )?;
    Ok(())
}

pub fn notes(c: &Connection, conversation: ConversationId) -> Result<Vec<NoteOut>, AppError> {
    c.prepare_cached(
        "SELECT id, conversation_id, author_user_id, text, created_at FROM conversation_notes
         WHERE conversation_id = ?1 ORDER BY created_at, id",
    )?
    .query_map([conversation], |r| {
        Ok(NoteOut {
            id: r.get::<_, NoteId>(0)?,
            conversation_id: r.get(1)?,
            author_user_id: r.get(2)?,
            text: r.get(3)?,
            created_at: r.get(4)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

// ---- socket tickets ---------------------------------------------------------------------

pub fn insert_ticket(
    tx: &Tx<'_>,
    hash: &[u8],
    user: UserId,
    store: StoreId,
    credential: &str,
    expires_at: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO ws_tickets (ticket_hash, user_id, store_id, credential, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![hash, user, store, credential, time::format(expires_at)],
    )?;
    Ok(())
}

/// Spends a ticket: (user, store, credential) when it is unused and unexpired; it cannot be
/// used again either way.
pub fn consume_ticket(
    tx: &Tx<'_>,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<(UserId, StoreId, String)>, AppError> {
    let now = time::format(now);
    Ok(tx
        .prepare_cached(
            "UPDATE ws_tickets SET used_at = ?2
             WHERE ticket_hash = ?1 AND used_at IS NULL AND expires_at > ?2
             RETURNING user_id, store_id, credential",
        )?
        .query_row(params![hash, now], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?)
}

/// Deletes tickets past their minute (run by the cleanup job).
pub fn purge_tickets(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM ws_tickets WHERE expires_at <= ?1",
        [time::format(now)],
    )?)
}

/// How long a chat conversation may stay without a message before it is deleted: a widget
/// opened and left, or an anonymous caller filling the table.
pub const EMPTY_CONVERSATION_TTL: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// Deletes chat conversations nobody wrote in for [`EMPTY_CONVERSATION_TTL`].
pub fn purge_empty_conversations(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM conversations
         WHERE last_message_at IS NULL AND channel_kind = 'storefront_chat' AND created_at < ?1",
        [time::format(now - EMPTY_CONVERSATION_TTL)],
    )?)
}

/// Whether a messaging-app channel other than `except` uses `number` (its phone number id).
pub fn number_taken(c: &Connection, number: &str, except: ChannelId) -> Result<bool, AppError> {
    Ok(c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM channels
           WHERE kind = 'msgapp' AND id <> ?2
             AND json_extract(settings, '$.phone_number_id') = ?1)",
    )?
    .query_row(params![number, except], |r| r.get(0))?)
}
