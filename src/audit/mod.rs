//! The audit trail (issue 4): every write made in a store, by any credential, is recorded
//! in the same transaction as the write itself, with the acting user, the token's name when
//! a store API token was used, and the request's trace id. `GET /stores/{id}/audit-log`
//! (audit.read) reads it, newest first. `via` names the path a write came through when it
//! was not an ordinary request: `assistant` for a write the assistant proposed and the named
//! user approved (issue 16). `details` says more where an action needs it
//! (`billing.limit_exceeded`: the limit, its max and the count that passed it).

use crate::db::Tx;
use axum::extract::State;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::AppError;
use crate::http::auth::{Credential, StoreScope};
use crate::http::extract::Json;
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{StoreId, UserId};
use crate::state::AppState;
use crate::time;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_audit_log))
}

/// Who did it, where, in which request. `store_id` is None for organization-level writes.
#[derive(Debug, Clone)]
pub struct Actor {
    pub store_id: Option<StoreId>,
    pub tenant_id: crate::ids::TenantId,
    pub user_id: UserId,
    pub token_name: Option<String>,
    pub trace_id: String,
    /// None for an ordinary request; [`VIA_ASSISTANT`] for a write the assistant proposed
    /// and `user_id` approved.
    pub via: Option<String>,
    /// Runs with the first audit entry recorded for this actor, in its transaction.
    pub on_record: OnRecord,
}

type Hook = Box<dyn FnOnce(&Tx<'_>) -> Result<(), AppError> + Send>;

/// Work that must commit with a write or not at all, run once in the transaction of the
/// write's audit entry: the assistant records the action it applied this way, so a write
/// never stands without its undo record (every write an actor makes is audited there).
#[derive(Clone, Default)]
pub struct OnRecord(Option<std::sync::Arc<std::sync::Mutex<Option<Hook>>>>);

impl OnRecord {
    pub fn new(f: impl FnOnce(&Tx<'_>) -> Result<(), AppError> + Send + 'static) -> Self {
        Self(Some(std::sync::Arc::new(std::sync::Mutex::new(Some(
            Box::new(f),
        )))))
    }

    fn run(&self, tx: &Tx<'_>) -> Result<(), AppError> {
        let hook = self.0.as_ref().and_then(|h| {
            h.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        });
        hook.map_or(Ok(()), |f| f(tx))
    }
}

impl std::fmt::Debug for OnRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OnRecord(set)"
        } else {
            "OnRecord(none)"
        })
    }
}

/// The `via` of a write the assistant proposed and a user approved.
pub const VIA_ASSISTANT: &str = "assistant";

impl Actor {
    pub fn of(scope: &StoreScope) -> Self {
        Self {
            store_id: Some(scope.store_id),
            tenant_id: scope.tenant_id,
            user_id: scope.principal.user_id,
            token_name: match &scope.principal.credential {
                Credential::StoreToken { name, .. } => Some(name.clone()),
                Credential::Session { .. } => None,
            },
            trace_id: scope.trace_id.clone(),
            via: None,
            on_record: OnRecord::default(),
        }
    }

    /// The same actor, with work to commit with its next audited write.
    #[must_use]
    pub fn on_record(self, hook: OnRecord) -> Self {
        Self {
            on_record: hook,
            ..self
        }
    }

    /// The same user's write, made through the assistant: they approved what it proposed.
    #[must_use]
    pub fn via_assistant(self) -> Self {
        Self {
            via: Some(VIA_ASSISTANT.to_owned()),
            ..self
        }
    }

    /// A write the server made on its own, for no user: a daily job, a payment provider's
    /// webhook, an operator's command. `actor_user_id` is the nil id; `via` names the source.
    pub fn system(tenant_id: crate::ids::TenantId, via: &str) -> Self {
        Self {
            store_id: None,
            tenant_id,
            user_id: UserId(uuid::Uuid::nil()),
            token_name: None,
            trace_id: uuid::Uuid::now_v7().simple().to_string(),
            via: Some(via.to_owned()),
            on_record: OnRecord::default(),
        }
    }

    /// An organization-level write by a signed-in user (store tokens cannot make these).
    pub fn in_tenant(tenant_id: crate::ids::TenantId, user_id: UserId, trace_id: &str) -> Self {
        Self {
            store_id: None,
            tenant_id,
            user_id,
            token_name: None,
            trace_id: trace_id.to_owned(),
            via: None,
            on_record: OnRecord::default(),
        }
    }
}

/// Records one write, in the caller's transaction. A domain change that also fires an event
/// goes through `webhooks::publish_change`, which calls this.
pub fn record(
    tx: &Tx<'_>,
    actor: &Actor,
    action: &str,
    resource_type: &str,
    resource_id: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    insert(tx, actor, (action, resource_type, resource_id), None, now)
}

/// [`record`] with what the entry is about beyond its resource (a limit passed, its count).
pub fn record_with_details(
    tx: &Tx<'_>,
    actor: &Actor,
    action: &str,
    resource_type: &str,
    resource_id: &str,
    details: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    insert(
        tx,
        actor,
        (action, resource_type, resource_id),
        Some(&details.to_string()),
        now,
    )
}

fn insert(
    tx: &Tx<'_>,
    actor: &Actor,
    (action, resource_type, resource_id): (&str, &str, &str),
    details: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO audit_log (id, store_id, tenant_id, actor_user_id, token_name, action,
                                resource_type, resource_id, trace_id, created_at, via, details)
         VALUES (?1, ?2, ?10, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?11, ?12)",
        params![
            uuid::Uuid::now_v7().to_string(),
            actor.store_id,
            actor.user_id,
            actor.token_name,
            action,
            resource_type,
            resource_id,
            actor.trace_id,
            time::format(now),
            actor.tenant_id,
            actor.via,
            details
        ],
    )?;
    actor.on_record.run(tx)?;
    Ok(())
}

/// One audit entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntryOut {
    pub id: String,
    pub actor_user_id: UserId,
    /// The store API token's name, when one was used.
    pub token_name: Option<String>,
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub trace_id: String,
    pub created_at: String,
    /// Null for an ordinary request; `assistant` when the assistant proposed the write and
    /// `actor_user_id` approved it.
    pub via: Option<String>,
    /// What the entry is about beyond its resource, for the few that say more (null
    /// otherwise): `billing.limit_exceeded` has `{limit, max, used}`.
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

fn row(r: &Row<'_>) -> rusqlite::Result<AuditEntryOut> {
    Ok(AuditEntryOut {
        id: r.get(0)?,
        actor_user_id: r.get(1)?,
        token_name: r.get(2)?,
        action: r.get(3)?,
        resource_type: r.get(4)?,
        resource_id: r.get(5)?,
        trace_id: r.get(6)?,
        created_at: r.get(7)?,
        via: r.get(8)?,
        details: match r.get_ref(9)? {
            rusqlite::types::ValueRef::Null => None,
            _ => Some(crate::db::json_column(r, 9)?),
        },
    })
}

fn list(
    c: &Connection,
    store: StoreId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<AuditEntryOut>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let mut stmt = c.prepare_cached(&format!(
        "SELECT id, actor_user_id, token_name, action, resource_type, resource_id, trace_id,
                created_at, via, details
         FROM audit_log WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    ))?;
    let rows = stmt
        .query_map(params![store, at, id, offset], row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The store's audit trail, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/audit-log", tag = "audit", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<AuditEntryOut>), (status = 403, body = crate::error::ErrorBody)))]
pub async fn list_audit_log(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<AuditEntryOut>>, AppError> {
    scope.require(Permission::AuditRead)?;
    let store_id = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("audit:{store_id}"),
            move |c, after, limit, offset| list(c, store_id, after, limit, offset),
            move |c| {
                Ok(c.query_row(
                    "SELECT COUNT(*) FROM audit_log WHERE store_id = ?1",
                    [store_id],
                    |r| r.get(0),
                )?)
            },
            |e| (e.created_at.clone(), e.id.clone()),
            |e| e,
        )
        .await?;
    Ok(Json(page))
}
