//! The assistant's SQL. Every read of a conversation, proposal or action names its owner
//! (store and user): nobody else's is ever found.

use crate::db::Tx;
use chrono::{DateTime, Datelike, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use super::model::{
    ActionOut, AssistantConversationOut, ProposalOut, ProposalStatus, Risk, Role, ToolCallOut,
    TranscriptMessage,
};
use super::provider::ToolCall;
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{
    ActionId, AssistantConversationId, AssistantMessageId, ProposalId, StoreId, UserId,
};
use crate::time;

const CONVERSATION_COLUMNS: &str = "id, store_id, name, created_at, updated_at";

fn conversation_row(r: &Row<'_>) -> rusqlite::Result<AssistantConversationOut> {
    Ok(AssistantConversationOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        name: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
        pending_proposals: None,
    })
}

pub fn insert_conversation(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    id: AssistantConversationId,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let at = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO assistant_conversations (id, store_id, user_id, name, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![id, store, user, name, at],
    )?;
    Ok(())
}

/// The user's conversation in the store.
pub fn get_conversation(
    c: &Connection,
    store: StoreId,
    user: UserId,
    id: AssistantConversationId,
) -> Result<Option<AssistantConversationOut>, AppError> {
    let sql = format!(
        "SELECT {CONVERSATION_COLUMNS} FROM assistant_conversations
         WHERE id = ?1 AND store_id = ?2 AND user_id = ?3"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![id, store, user], conversation_row)
        .optional()?)
}

/// The store of one of the user's conversations (the unscoped paths find it this way).
pub fn conversation_store(
    c: &Connection,
    user: UserId,
    id: AssistantConversationId,
) -> Result<Option<StoreId>, AppError> {
    Ok(c.prepare_cached(
        "SELECT store_id FROM assistant_conversations WHERE id = ?1 AND user_id = ?2",
    )?
    .query_row(params![id, user], |r| r.get(0))
    .optional()?)
}

const SEARCH: &str = "store_id = ?1 AND user_id = ?2 AND (?3 IS NULL OR name LIKE ?3 ESCAPE '\\'
    OR EXISTS (SELECT 1 FROM assistant_messages m WHERE m.conversation_id = assistant_conversations.id
               AND m.role IN ('user', 'assistant') AND m.content LIKE ?3 ESCAPE '\\'))";

/// The user's conversations in the store, newest first.
pub fn list_conversations(
    c: &Connection,
    store: StoreId,
    user: UserId,
    search: Option<&str>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<AssistantConversationOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {CONVERSATION_COLUMNS} FROM assistant_conversations
         WHERE {SEARCH} AND (created_at, id) < (?4, ?5)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?6"
    );
    let pattern = search.map(crate::db::contains_pattern);
    c.prepare_cached(&sql)?
        .query_map(
            params![store, user, pattern, at, id, offset],
            conversation_row,
        )?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_conversations(
    c: &Connection,
    store: StoreId,
    user: UserId,
    search: Option<&str>,
) -> Result<i64, AppError> {
    let sql = format!("SELECT COUNT(*) FROM assistant_conversations WHERE {SEARCH}");
    let pattern = search.map(crate::db::contains_pattern);
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, user, pattern], |r| r.get(0))?)
}

/// Renames the user's conversation; false when it is not theirs.
pub fn rename_conversation(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    id: AssistantConversationId,
    name: &str,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE assistant_conversations SET name = ?4, updated_at = ?5
         WHERE id = ?1 AND store_id = ?2 AND user_id = ?3",
        params![id, store, user, name, time::format(now)],
    )? == 1)
}

/// Deletes the user's conversation with its messages and proposals (actions stay, without
/// it); false when it is not theirs.
pub fn delete_conversation(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    id: AssistantConversationId,
) -> Result<bool, AppError> {
    crate::db::exec(
        tx,
        "UPDATE assistant_actions SET conversation_id = NULL WHERE conversation_id = ?1",
        params![id],
    )?;
    Ok(crate::db::exec(
        tx,
        "DELETE FROM assistant_conversations WHERE id = ?1 AND store_id = ?2 AND user_id = ?3",
        params![id, store, user],
    )? == 1)
}

/// A message to append to a transcript.
pub struct NewMessage<'a> {
    pub role: Role,
    pub content: &'a str,
    pub tool_calls: Option<&'a [ToolCall]>,
    pub tool_call_id: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub ended: Option<&'a str>,
}

impl<'a> NewMessage<'a> {
    /// A tool's answer to the call `call_id` of the assistant message before it.
    pub fn tool(call_id: &'a str, tool: &'a str, content: &'a str) -> Self {
        Self {
            tool_call_id: Some(call_id),
            tool: Some(tool),
            ..Self::text(Role::Tool, content)
        }
    }

    pub fn text(role: Role, content: &'a str) -> Self {
        Self {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
            tool: None,
            ended: None,
        }
    }
}

/// Appends a message and touches the conversation.
pub fn append(
    tx: &Tx<'_>,
    conversation: AssistantConversationId,
    m: &NewMessage<'_>,
    now: DateTime<Utc>,
) -> Result<AssistantMessageId, AppError> {
    let id = AssistantMessageId::new();
    let calls = m
        .tool_calls
        .filter(|c| !c.is_empty())
        .map(serde_json::to_string)
        .transpose()
        .map_err(AppError::internal)?;
    let at = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO assistant_messages (id, conversation_id, seq, role, content, tool_calls,
                                         tool_call_id, tool_name, ended, created_at)
         VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM assistant_messages
                          WHERE conversation_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            conversation,
            m.role,
            m.content,
            calls,
            m.tool_call_id,
            m.tool,
            m.ended,
            at
        ],
    )?;
    crate::db::exec(
        tx,
        "UPDATE assistant_conversations SET updated_at = ?2 WHERE id = ?1",
        params![conversation, at],
    )?;
    Ok(id)
}

/// A stored message as the model is sent it again.
pub struct Stored {
    pub role: Role,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub tool: Option<String>,
}

/// The whole transcript, oldest first, for the next request to the model.
pub fn history(
    c: &Connection,
    conversation: AssistantConversationId,
) -> Result<Vec<Stored>, AppError> {
    c.prepare_cached(
        "SELECT role, content, tool_calls, tool_call_id, tool_name FROM assistant_messages
         WHERE conversation_id = ?1 ORDER BY seq",
    )?
    .query_map([conversation], |r| {
        let calls: Option<String> = r.get(2)?;
        Ok(Stored {
            role: r.get(0)?,
            content: r.get(1)?,
            tool_calls: calls
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or_default(),
            tool_call_id: r.get(3)?,
            tool: r.get(4)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

/// A page of the transcript, oldest first, each tool message with its proposal.
pub fn transcript(
    c: &Connection,
    conversation: AssistantConversationId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
    now: DateTime<Utc>,
) -> Result<Vec<(TranscriptMessage, i64)>, AppError> {
    let seq: i64 = after.and_then(|(s, _)| s.parse().ok()).unwrap_or(0);
    let sql = format!(
        "SELECT m.id, m.role, m.content, m.tool_calls, m.tool_call_id, m.tool_name, m.ended,
                m.created_at, m.seq, p.id
         FROM assistant_messages m
         LEFT JOIN assistant_proposals p
                ON p.conversation_id = m.conversation_id AND p.tool_call_id = m.tool_call_id
               AND m.role = 'tool'
         WHERE m.conversation_id = ?1 AND m.seq > ?2
         ORDER BY m.seq LIMIT {limit} OFFSET ?3"
    );
    let rows: Vec<(TranscriptMessage, i64, Option<ProposalId>)> = c
        .prepare_cached(&sql)?
        .query_map(params![conversation, seq, offset], |r| {
            let calls: Option<String> = r.get(3)?;
            let calls: Option<Vec<ToolCall>> = calls.and_then(|c| serde_json::from_str(&c).ok());
            Ok((
                TranscriptMessage {
                    id: r.get(0)?,
                    role: r.get(1)?,
                    content: r.get(2)?,
                    tool_calls: calls.map(|calls| calls.into_iter().map(call_out).collect()),
                    tool_call_id: r.get(4)?,
                    tool: r.get(5)?,
                    proposal: None,
                    ended: r.get(6)?,
                    created_at: r.get(7)?,
                },
                r.get(8)?,
                r.get(9)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    rows.into_iter()
        .map(|(mut m, seq, proposal)| {
            if let Some(p) = proposal {
                m.proposal = get_proposal_by_id(c, p, now)?;
            }
            Ok((m, seq))
        })
        .collect()
}

pub fn count_messages(
    c: &Connection,
    conversation: AssistantConversationId,
) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM assistant_messages WHERE conversation_id = ?1")?
            .query_row([conversation], |r| r.get(0))?,
    )
}

/// A tool call as the API shows it: its arguments as JSON when they are.
pub fn call_out(c: ToolCall) -> ToolCallOut {
    let arguments = serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments));
    ToolCallOut {
        id: c.id,
        tool: c.name,
        arguments,
    }
}

/// A proposal's columns; parameter `?{now}` is the time it is read at (a pending proposal
/// past its hour reads as expired).
fn proposal_columns(now: usize) -> String {
    format!(
        "id, conversation_id, tool, arguments, summary, risk,
         CASE WHEN status = 'pending' AND expires_at <= ?{now} THEN 'expired' ELSE status END,
         expires_at, decided_at, created_at"
    )
}

fn proposal_row(r: &Row<'_>) -> rusqlite::Result<ProposalOut> {
    let args: String = r.get(3)?;
    Ok(ProposalOut {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        tool: r.get(2)?,
        arguments: serde_json::from_str(&args).unwrap_or(Value::Null),
        summary: r.get(4)?,
        risk: r.get(5)?,
        status: r.get(6)?,
        expires_at: r.get(7)?,
        decided_at: r.get(8)?,
        created_at: r.get(9)?,
    })
}

/// A proposal to store.
pub struct NewProposal<'a> {
    pub id: ProposalId,
    pub store: StoreId,
    pub user: UserId,
    pub conversation: AssistantConversationId,
    pub tool_call_id: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub summary: &'a str,
    pub risk: Risk,
    pub expires_at: DateTime<Utc>,
}

fn insert_proposal(tx: &Tx<'_>, p: &NewProposal<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO assistant_proposals (id, store_id, user_id, conversation_id, tool_call_id,
             tool, arguments, summary, risk, status, expires_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', ?10, ?11)",
        params![
            p.id,
            p.store,
            p.user,
            p.conversation,
            p.tool_call_id,
            p.tool,
            p.arguments.to_string(),
            p.summary,
            p.risk,
            time::format(p.expires_at),
            time::format(now)
        ],
    )?;
    Ok(())
}

/// A proposal by id whoever's it is, as it stands (for `setup --demo`).
pub fn proposal_by_id_unscoped(
    c: &Connection,
    id: ProposalId,
    now: DateTime<Utc>,
) -> Result<ProposalOut, AppError> {
    get_proposal_by_id(c, id, now)?.ok_or_else(|| AppError::not_found("proposal"))
}

/// Stores a proposal and the answer to its tool call the model reads: awaiting approval.
pub fn propose(tx: &Tx<'_>, p: &NewProposal<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    insert_proposal(tx, p, now)?;
    let waiting = serde_json::json!({"status": "awaiting_approval", "proposal_id": p.id,
                                     "summary": p.summary})
    .to_string();
    append(
        tx,
        p.conversation,
        &NewMessage::tool(p.tool_call_id, p.tool, &waiting),
        now,
    )?;
    Ok(())
}

fn get_proposal_by_id(
    c: &Connection,
    id: ProposalId,
    now: DateTime<Utc>,
) -> Result<Option<ProposalOut>, AppError> {
    let sql = format!(
        "SELECT {} FROM assistant_proposals WHERE id = ?1",
        proposal_columns(2)
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![id, time::format(now)], proposal_row)
        .optional()?)
}

/// One of the user's proposals, with the store it belongs to.
pub fn proposal_of(
    c: &Connection,
    user: UserId,
    id: ProposalId,
    now: DateTime<Utc>,
) -> Result<Option<(StoreId, ProposalOut)>, AppError> {
    let Some(store): Option<StoreId> = c
        .prepare_cached("SELECT store_id FROM assistant_proposals WHERE id = ?1 AND user_id = ?2")?
        .query_row(params![id, user], |r| r.get(0))
        .optional()?
    else {
        return Ok(None);
    };
    Ok(get_proposal_by_id(c, id, now)?.map(|p| (store, p)))
}

/// The conversation's proposals awaiting a decision, oldest first.
pub fn pending_proposals(
    c: &Connection,
    conversation: AssistantConversationId,
    now: DateTime<Utc>,
) -> Result<Vec<ProposalOut>, AppError> {
    let sql = format!(
        "SELECT {} FROM assistant_proposals
         WHERE conversation_id = ?1 AND status = 'pending' AND expires_at > ?2
         ORDER BY created_at, id",
        proposal_columns(2)
    );
    c.prepare_cached(&sql)?
        .query_map(params![conversation, time::format(now)], proposal_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

/// Moves a pending, unexpired proposal of the user to `to`; false when there is none (it
/// was decided, expired, or is another's): the one gate two approvals race through.
pub fn decide(
    tx: &Tx<'_>,
    user: UserId,
    id: ProposalId,
    to: ProposalStatus,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE assistant_proposals SET status = ?3, decided_at = ?4
         WHERE id = ?1 AND user_id = ?2 AND status = 'pending' AND expires_at > ?4",
        params![id, user, to, time::format(now)],
    )? == 1)
}

/// Ends an approval that was running the write: `applied`, `failed`, or back to
/// `pending` when a check before the write refused it.
pub fn settle(
    tx: &Tx<'_>,
    id: ProposalId,
    to: ProposalStatus,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let decided = (to != ProposalStatus::Pending).then(|| time::format(now));
    crate::db::exec(
        tx,
        "UPDATE assistant_proposals SET status = ?2, decided_at = ?3
         WHERE id = ?1 AND status = 'applying'",
        params![id, to, decided],
    )?;
    Ok(())
}

/// An applied write to record.
pub struct NewAction<'a> {
    pub store: StoreId,
    pub user: UserId,
    pub proposal: &'a ProposalOut,
    pub resource_type: &'a str,
    pub resource_id: &'a str,
    pub undo: Option<&'a Value>,
}

pub fn insert_action(
    tx: &Tx<'_>,
    a: &NewAction<'_>,
    now: DateTime<Utc>,
) -> Result<ActionId, AppError> {
    let id = ActionId::new();
    crate::db::exec(
        tx,
        "INSERT INTO assistant_actions (id, store_id, user_id, proposal_id, conversation_id,
             tool, arguments, summary, resource_type, resource_id, undo, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            id,
            a.store,
            a.user,
            a.proposal.id,
            a.proposal.conversation_id,
            a.proposal.tool,
            a.proposal.arguments.to_string(),
            a.proposal.summary,
            a.resource_type,
            a.resource_id,
            a.undo.map(Value::to_string),
            time::format(now)
        ],
    )?;
    Ok(id)
}

const ACTION_COLUMNS: &str = "id, store_id, proposal_id, conversation_id, tool, arguments, summary,
    resource_type, resource_id, undo IS NOT NULL, undone_at, created_at";

fn action_row(r: &Row<'_>) -> rusqlite::Result<ActionOut> {
    let args: String = r.get(5)?;
    Ok(ActionOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        proposal_id: r.get(2)?,
        conversation_id: r.get(3)?,
        tool: r.get(4)?,
        arguments: serde_json::from_str(&args).unwrap_or(Value::Null),
        summary: r.get(6)?,
        resource_type: r.get(7)?,
        resource_id: r.get(8)?,
        undoable: r.get(9)?,
        undone_at: r.get(10)?,
        created_at: r.get(11)?,
    })
}

/// The user's action in the store, with how to undo it.
pub fn get_action(
    c: &Connection,
    store: StoreId,
    user: UserId,
    id: ActionId,
) -> Result<Option<(ActionOut, Option<Value>)>, AppError> {
    let sql = format!(
        "SELECT {ACTION_COLUMNS}, undo FROM assistant_actions
         WHERE id = ?1 AND store_id = ?2 AND user_id = ?3"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![id, store, user], |r| {
            let undo: Option<String> = r.get(12)?;
            Ok((
                action_row(r)?,
                undo.and_then(|u| serde_json::from_str(&u).ok()),
            ))
        })
        .optional()?)
}

/// Marks an action undone; false when it already was (the gate two undos race through).
pub fn mark_undone(
    tx: &Tx<'_>,
    id: ActionId,
    undone: Option<DateTime<Utc>>,
) -> Result<bool, AppError> {
    let sql = if undone.is_some() {
        "UPDATE assistant_actions SET undone_at = ?2 WHERE id = ?1 AND undone_at IS NULL"
    } else {
        "UPDATE assistant_actions SET undone_at = ?2 WHERE id = ?1"
    };
    Ok(crate::db::exec(tx, sql, params![id, undone.map(time::format)])? == 1)
}

/// The user's actions in the store, newest first.
pub fn list_actions(
    c: &Connection,
    store: StoreId,
    user: UserId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<ActionOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {ACTION_COLUMNS} FROM assistant_actions
         WHERE store_id = ?1 AND user_id = ?2 AND (created_at, id) < (?3, ?4)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, user, at, id, offset], action_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_actions(c: &Connection, store: StoreId, user: UserId) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM assistant_actions WHERE store_id = ?1 AND user_id = ?2",
    )?
    .query_row(params![store, user], |r| r.get(0))?)
}

/// The calendar month (UTC) `now` falls in: its key and bounds.
pub fn period(now: DateTime<Utc>) -> (String, DateTime<Utc>, DateTime<Utc>) {
    let start = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(now);
    let (y, m) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let end = Utc
        .with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .unwrap_or(now);
    (start.format("%Y-%m").to_string(), start, end)
}

/// Messages the store sent the assistant this period.
pub fn used(c: &Connection, store: StoreId, now: DateTime<Utc>) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COALESCE((SELECT used FROM assistant_usage WHERE store_id = ?1 AND period = ?2), 0)",
    )?
    .query_row(params![store, period(now).0], |r| r.get(0))?)
}

/// What counting a message against the store's monthly cap found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Taken,
    /// The cap is reached: nothing was counted.
    Full {
        cap: i64,
    },
}

/// Counts one message against the store's monthly cap, in the caller's transaction. The cap
/// is the plan's (`billing::limits::assistant_terms`; `ceiling` is the operator's
/// `--assistant-monthly-cap`), read by key in the transaction that bumps the usage row; 402
/// `subscription_inactive` before anything is counted while the organization's subscription
/// is suspended or canceled.
pub fn take_message(
    tx: &Tx<'_>,
    (plans, ceiling): (&crate::billing::plans::Catalog, Option<u32>),
    store: StoreId,
    now: DateTime<Utc>,
) -> Result<Slot, AppError> {
    let cap = crate::billing::limits::assistant_terms(tx, plans, ceiling, store)?.active_cap()?;
    Ok(if take_one(tx, store, cap, now)? {
        Slot::Taken
    } else {
        Slot::Full { cap }
    })
}

/// Counts one message against the cap; false (nothing counted) when the cap is reached.
fn take_one(tx: &Tx<'_>, store: StoreId, cap: i64, now: DateTime<Utc>) -> Result<bool, AppError> {
    let key = period(now).0;
    crate::db::exec(
        tx,
        "INSERT INTO assistant_usage (store_id, period, used) VALUES (?1, ?2, 0)
         ON CONFLICT (store_id, period) DO NOTHING",
        params![store, key],
    )?;
    Ok(crate::db::exec(
        tx,
        "UPDATE assistant_usage SET used = used + 1
         WHERE store_id = ?1 AND period = ?2 AND used < ?3",
        params![store, key, cap],
    )? == 1)
}

/// Approvals a crash interrupted (the server stopped between taking the proposal and
/// finishing), after ten minutes: a write that commits with its action record did not
/// happen (`failed`); a refund or a reply, recorded only after it, may have
/// (`interrupted`: the order or the conversation tells).
pub fn fail_interrupted(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE assistant_proposals
         SET status = CASE WHEN tool IN ('refund_order', 'reply_to_conversation')
                           THEN 'interrupted' ELSE 'failed' END
         WHERE status = 'applying' AND decided_at < ?1",
        [time::format(now - chrono::Duration::minutes(10))],
    )?)
}
