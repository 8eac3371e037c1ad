//! A user's phone for talking to the assistant over the store's messaging app: verified with
//! a six-digit code sent through the messaging-app provider (valid 5 minutes, 5 wrong tries
//! burn it, kept as a keyed hash and compared in constant time).

use crate::db::Tx;
use axum::extract::State;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{AppError, ErrorBody, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::Json;
use crate::http::permissions::Permission;
use crate::ids::{AssistantConversationId, ChannelId, StoreId, UserId};
use crate::state::AppState;
use crate::time;

/// How long a code stays valid.
pub const CODE_SECS: i64 = 300;
/// Wrong codes before it is burned.
const ATTEMPTS: i64 = 5;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneIn {
    /// E.164: `+`, country code and number (8 to 15 digits, the first not 0).
    #[schema(pattern = r"^\+[1-9][0-9]{7,14}$")]
    pub phone_e164: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PhoneStarted {
    pub phone_e164: String,
    pub expires_in_seconds: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneVerifyIn {
    pub code: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PhoneOut {
    pub phone_e164: String,
    pub verified_at: String,
}

fn e164(s: &str) -> Option<String> {
    let d = s.trim().strip_prefix('+')?;
    ((8..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0'))
        .then(|| format!("+{d}"))
}

/// Sends a code to the phone. It replaces the user's phone in this store: an earlier one
/// stops reaching the assistant until this one is verified.
#[utoipa::path(post, path = "/stores/{store_id}/assistant/phones", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = PhoneIn,
    responses((status = 200, body = PhoneStarted), (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "msgapp_send_failed")))]
pub async fn start_phone(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<PhoneIn>,
) -> Result<Json<PhoneStarted>, AppError> {
    scope.require(Permission::AssistantUse)?;
    signed_in(&scope)?;
    let phone = e164(&input.phone_e164)
        .ok_or_else(|| AppError::field("phone_e164", "must be + and 8 to 15 digits (E.164)"))?;
    let code = crate::auth::store::new_code();
    let hash = crate::secrets::keyed_hash(&st.hmac_key, code.as_bytes());
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    let (p, per_hour) = (phone.clone(), st.cfg.code_sends_per_hour);
    st.db
        .write(move |tx| pending(tx, (store_id, user), &p, &hash, now, per_hour))
        .await?
        .map_err(|wait| {
            AppError::new(
                ErrorCode::RateLimited,
                "too many codes sent; try again later",
            )
            .with_details(serde_json::json!({ "retry_after_seconds": wait }))
        })?;
    let locale = crate::auth::model::Locale::parse(&scope.principal.profile.locale)
        .unwrap_or(crate::auth::model::Locale::PtBr);
    let msg = crate::msgapp::CodeMessage {
        to: &phone,
        code: &code,
        locale,
    };
    if crate::msgapp::send_code(&st.cfg.msgapp, &st.db, msg, now)
        .await
        .is_err()
    {
        return Err(AppError::new(
            ErrorCode::MsgappSendFailed,
            "the code could not be sent to that phone",
        ));
    }
    Ok(Json(PhoneStarted {
        phone_e164: phone,
        expires_in_seconds: CODE_SECS,
    }))
}

/// Checks the code sent to the phone; right, the phone can chat with the assistant over
/// the store's messaging-app channel. 422 `invalid_verification_code` when wrong, expired,
/// burned or never sent.
#[utoipa::path(post, path = "/stores/{store_id}/assistant/phones/verify", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = PhoneVerifyIn,
    responses((status = 200, body = PhoneOut), (status = 409, body = ErrorBody, description = "`conflict`"),
              (status = 422, body = ErrorBody)))]
pub async fn verify_phone(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<PhoneVerifyIn>,
) -> Result<Json<PhoneOut>, AppError> {
    scope.require(Permission::AssistantUse)?;
    signed_in(&scope)?;
    let hash = crate::secrets::keyed_hash(&st.hmac_key, input.code.trim().as_bytes());
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    let outcome = st
        .db
        .write_to_finish(move |tx| check(tx, store_id, user, &hash, now))
        .await?;
    outcome.map(Json)
}

/// A phone acts with its user's whole role in the store, so only the user signed in may add
/// one: a store API token, held to its scopes, may not.
fn signed_in(scope: &StoreScope) -> Result<(), AppError> {
    if scope.principal.is_store_token() {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "a phone is added by the user signed in, not with a store API token",
        ));
    }
    Ok(())
}

fn wrong() -> AppError {
    AppError::new(
        ErrorCode::InvalidVerificationCode,
        "the code is wrong, expired or was never sent",
    )
}

/// Stores a new pending code for the user's phone (replacing any pending one), within
/// `per_hour` sends per user and store (`--code-sends-per-hour`; each code allows 5
/// tries); else the seconds until another may be sent.
fn pending(
    tx: &Tx<'_>,
    (store, user): (StoreId, UserId),
    phone: &str,
    hash: &[u8],
    now: DateTime<Utc>,
    per_hour: u32,
) -> Result<Result<(), i64>, AppError> {
    let window: Option<(Option<String>, i64)> = tx
        .query_row(
            "SELECT send_window_start, sends FROM assistant_phones
             WHERE store_id = ?1 AND user_id = ?2",
            params![store, user],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let hour_ago = time::format(now - chrono::Duration::hours(1));
    let (start, sends) = match window {
        Some((Some(start), sends)) if start > hour_ago => (start, sends),
        _ => (time::format(now), 0),
    };
    if sends >= i64::from(per_hour) {
        let opens = time::parse(&start).map_or(now, |t| t + chrono::Duration::hours(1));
        return Ok(Err((opens - now).num_seconds().max(1)));
    }
    let expires = time::format(now + chrono::Duration::seconds(CODE_SECS));
    crate::db::exec(
        tx,
        "INSERT INTO assistant_phones (store_id, user_id, phone_e164, code_hash, code_expires_at,
                                       attempts, verified_at, send_window_start, sends, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 0, NULL, ?6, ?7, ?8)
         ON CONFLICT (store_id, user_id) DO UPDATE SET phone_e164 = ?3, code_hash = ?4,
             code_expires_at = ?5, attempts = 0, verified_at = NULL,
             send_window_start = ?6, sends = ?7",
        params![
            store,
            user,
            phone,
            hash,
            expires,
            start,
            sends + 1,
            time::format(now)
        ],
    )?;
    Ok(Ok(()))
}

/// A user's phone row: the number, the code's hash and expiry, the wrong tries so far.
type PendingCode = (String, Option<Vec<u8>>, Option<String>, i64);

/// The verify step, committed whatever its outcome (a wrong try counts).
fn check(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Result<PhoneOut, AppError>, AppError> {
    let row: Option<PendingCode> = tx
        .query_row(
            "SELECT phone_e164, code_hash, code_expires_at, attempts FROM assistant_phones
             WHERE store_id = ?1 AND user_id = ?2",
            params![store, user],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let Some((phone, Some(stored), Some(expires), attempts)) = row else {
        return Ok(Err(wrong()));
    };
    if attempts >= ATTEMPTS || expires <= time::format(now) {
        return Ok(Err(wrong()));
    }
    if !crate::secrets::same(&stored, hash) {
        crate::db::exec(
            tx,
            "UPDATE assistant_phones SET attempts = attempts + 1 WHERE store_id = ?1 AND user_id = ?2",
            params![store, user],
        )?;
        return Ok(Err(wrong()));
    }
    let taken: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM assistant_phones WHERE store_id = ?1 AND phone_e164 = ?2
                         AND verified_at IS NOT NULL AND user_id <> ?3)",
        params![store, phone, user],
        |r| r.get(0),
    )?;
    if taken {
        return Ok(Err(AppError::conflict(
            ErrorCode::Conflict,
            "another member of this store has verified that phone",
        )));
    }
    let at = time::format(now);
    crate::db::exec(
        tx,
        "UPDATE assistant_phones SET code_hash = NULL, code_expires_at = NULL, verified_at = ?3
         WHERE store_id = ?1 AND user_id = ?2",
        params![store, user, at],
    )?;
    Ok(Ok(PhoneOut {
        phone_e164: phone,
        verified_at: at,
    }))
}

fn active(c: &Connection, user: UserId) -> Result<bool, AppError> {
    Ok(
        c.prepare_cached("SELECT disabled_at IS NULL FROM users WHERE id = ?1")?
            .query_row([user], |r| r.get(0))
            .optional()?
            .unwrap_or(false),
    )
}

/// The user whose verified phone `phone` is, in the store.
pub fn verified_user(
    c: &Connection,
    store: StoreId,
    phone: &str,
) -> Result<Option<UserId>, AppError> {
    Ok(c.prepare_cached(
        "SELECT user_id FROM assistant_phones
         WHERE store_id = ?1 AND phone_e164 = ?2 AND verified_at IS NOT NULL",
    )?
    .query_row(params![store, phone], |r| r.get(0))
    .optional()?)
}

/// A message from a user's verified phone, for the assistant: run as a job, so it is taken
/// once, after the webhook's transaction commits.
#[derive(Debug, Serialize, Deserialize)]
pub struct PhoneTurn {
    pub store_id: StoreId,
    pub user_id: UserId,
    pub channel_id: ChannelId,
    pub phone: String,
    pub text: String,
}

impl crate::jobs::JobKind for PhoneTurn {
    const KIND: &'static str = "assistant_phone_turn";

    /// A turn is not repeated: a second try would ask the model (and the user) twice.
    fn max_attempts(&self) -> u32 {
        1
    }
}

/// In the messaging-app channel's transaction, for each inbound message: true when the
/// sender is a user's verified assistant phone, so the message is the assistant's and not
/// the inbox's; its turn is queued once per provider message id.
pub fn take_inbound(
    tx: &Tx<'_>,
    store: StoreId,
    channel: ChannelId,
    phone: &str,
    provider_message_id: &str,
    text: &str,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let Some(user) = verified_user(tx, store, phone)? else {
        return Ok(false);
    };
    // A user no longer in the store, or turned off, speaks for nobody: their number's
    // messages go to the inbox as anyone's.
    if crate::auth::store::store_role(tx, store, user)?.is_none() || !active(tx, user)? {
        return Ok(false);
    }
    let fresh = crate::db::exec(
        tx,
        "INSERT INTO assistant_phone_inbound (provider_message_id, created_at) VALUES (?1, ?2)
         ON CONFLICT DO NOTHING",
        params![provider_message_id, time::format(now)],
    )? == 1;
    if fresh {
        let job = PhoneTurn {
            store_id: store,
            user_id: user,
            channel_id: channel,
            phone: phone.to_owned(),
            text: text.chars().take(4000).collect(),
        };
        crate::jobs::enqueue(tx, &job, now)?;
    }
    Ok(true)
}

const YES: [&str; 2] = ["yes", "sim"];
const NO: [&str; 3] = ["no", "não", "nao"];

/// The short code a phone names a proposal by: the end of its id (the random part).
pub fn short_code(id: crate::ids::ProposalId) -> String {
    let s = id.to_string();
    s[s.len() - 6..].to_uppercase()
}

/// A reply that decides a proposal: `YES <code>` or `NO <code>`, the code of one of the
/// conversation's pending proposals. A bare yes names nothing: never a guess at which.
fn decision_in(
    answer: &str,
    pending: &[super::model::ProposalOut],
) -> Option<(crate::ids::ProposalId, super::proposals::Decision)> {
    use super::proposals::Decision;
    let mut words = answer.split_whitespace();
    let (word, code) = (words.next()?.to_lowercase(), words.next()?.to_uppercase());
    if words.next().is_some() {
        return None;
    }
    let p = pending.iter().find(|p| short_code(p.id) == code)?;
    if YES.contains(&word.as_str()) {
        // The code is the confirmation: it names this proposal after its summary was read.
        Some((p.id, Decision::Approve { confirmed: true }))
    } else if NO.contains(&word.as_str()) {
        Some((p.id, Decision::Decline))
    } else {
        None
    }
}

/// Runs a phone message as an assistant turn and answers on the messaging app: the
/// model's text, each proposal with "reply YES or NO", and what a YES or NO did.
pub async fn run_phone_turn(st: &AppState, job: PhoneTurn) -> anyhow::Result<()> {
    // A turn can take minutes: it runs as its own task, not on a job worker's time.
    let st = st.clone();
    tokio::spawn(async move {
        if let Err(e) = answer_phone(&st, job).await {
            tracing::warn!(error = %e, "an assistant reply to a phone failed");
        }
    });
    Ok(())
}

async fn answer_phone(st: &AppState, job: PhoneTurn) -> anyhow::Result<()> {
    let reply = match phone_turn(st, &job).await {
        Ok(r) => r,
        // Said plainly: the phone's owner cannot act on an error code.
        Err(e) if e.code == ErrorCode::SubscriptionInactive => format!(
            "The assistant is paused: {}. An owner can renew it in the back office.",
            e.message
        ),
        Err(e) => format!("That could not be done: {}", e.message),
    };
    if reply.trim().is_empty() {
        return Ok(());
    }
    let channel = job.channel_id;
    let number: Option<String> = st
        .db
        .read(move |c| {
            Ok(
                crate::inbox::store::channel_by_id_unscoped(c, channel)?.and_then(|ch| {
                    ch.settings
                        .get("phone_number_id")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                }),
            )
        })
        .await?;
    let Some(number) = number else {
        tracing::warn!(channel_id = %channel, "an assistant reply had no channel to go out on");
        return Ok(());
    };
    let body: String = reply.chars().take(4000).collect();
    let msg = crate::msgapp::TextMessage {
        phone_number_id: &number,
        to: &job.phone,
        body: &body,
    };
    crate::msgapp::send_text(&st.cfg.msgapp, &st.db, msg, st.clock.now()).await?;
    Ok(())
}

async fn phone_turn(st: &AppState, job: &PhoneTurn) -> Result<String, AppError> {
    use super::model::Role;
    use super::proposals;
    use super::turn::{self, Caller, Events};

    let (store, user) = (job.store_id, job.user_id);
    let Some((tenant, role)) = st
        .db
        .read(move |c| {
            Ok(if active(c, user)? {
                crate::auth::store::store_role(c, store, user)?
            } else {
                None
            })
        })
        .await?
    else {
        return Ok(String::new()); // turned off or gone from the store since
    };
    let permissions = role.permissions();
    if !permissions.contains(Permission::AssistantUse) {
        return Ok("Your role in this store does not include the assistant.".into());
    }
    let model = turn::model(st)?;
    let caller = Caller {
        store,
        user,
        permissions,
    };
    let actor = crate::audit::Actor {
        store_id: Some(store),
        tenant_id: tenant,
        user_id: user,
        token_name: None,
        trace_id: format!("msgapp-{}", uuid::Uuid::now_v7()),
        via: None,
        on_record: crate::audit::OnRecord::default(),
    }
    .via_assistant();
    let now = st.clock.now();
    let conversation = st
        .db
        .write(move |tx| phone_conversation(tx, store, user, now))
        .await?;
    let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let events = Events::Collect(collected.clone());
    let pending = st
        .db
        .read(move |c| super::store::pending_proposals(c, conversation, now))
        .await?;
    let decision = decision_in(&job.text, &pending);
    if let Some((id, decision)) = decision {
        let d = proposals::decide(st, &caller, actor, id, decision).await?;
        turn::run(
            st.clone(),
            d.model,
            caller,
            d.conversation,
            d.guard,
            events,
            d.first,
        )
        .await;
    } else {
        let guard = st.assistant.begin(conversation)?;
        let (cfg, text) = (st.cfg.clone(), job.text.clone());
        st.db
            .write(move |tx| {
                let limits = (&*cfg.plans, cfg.assistant_monthly_cap);
                let slot = super::store::take_message(tx, limits, store, now)?;
                if slot != super::store::Slot::Taken {
                    return Err(AppError::new(
                        ErrorCode::AssistantCapReached,
                        "this store has used this month's assistant messages",
                    ));
                }
                super::store::append(
                    tx,
                    conversation,
                    &super::store::NewMessage::text(Role::User, &text),
                    now,
                )?;
                Ok(())
            })
            .await?;
        turn::run(
            st.clone(),
            Some(model),
            caller,
            conversation,
            guard,
            events,
            Vec::new(),
        )
        .await;
    }
    let events = collected
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Ok(compose(&events))
}

/// The user's messaging-app conversation with the assistant, made when missing.
fn phone_conversation(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<AssistantConversationId, AppError> {
    let kept: Option<AssistantConversationId> = tx
        .query_row(
            "SELECT p.conversation_id FROM assistant_phones p
             JOIN assistant_conversations c ON c.id = p.conversation_id
             WHERE p.store_id = ?1 AND p.user_id = ?2",
            params![store, user],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = kept {
        return Ok(id);
    }
    let id = AssistantConversationId::new();
    super::store::insert_conversation(tx, store, user, id, "Messaging app", now)?;
    crate::db::exec(
        tx,
        "UPDATE assistant_phones SET conversation_id = ?3 WHERE store_id = ?1 AND user_id = ?2",
        params![store, user, id],
    )?;
    Ok(id)
}

/// The reply a phone gets for a turn's events.
fn compose(events: &[(String, serde_json::Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        match name.as_str() {
            "text" => out.push_str(data["delta"].as_str().unwrap_or_default()),
            "tool_result" if data.get("applied").is_some() => {
                if data["applied"] == true {
                    out.push_str("Applied.\n");
                } else {
                    out.push_str(&format!(
                        "Not applied: {}\n",
                        data["error"]["message"].as_str().unwrap_or("refused")
                    ));
                }
            }
            "proposal" => {
                let code = data["proposal_id"]
                    .as_str()
                    .and_then(|id| id.parse().ok())
                    .map(short_code)
                    .unwrap_or_default();
                out.push_str(&format!(
                    "\n\n{}\nReply YES {code} to approve or NO {code} to decline.",
                    data["summary"].as_str().unwrap_or_default()
                ));
            }
            "error" => out.push_str(&format!(
                "\n(The assistant could not finish: {})",
                data["message"].as_str().unwrap_or_default()
            )),
            _ => {}
        }
    }
    out.trim().to_owned()
}

/// Forgets provider message ids after a week: a provider repeats a delivery within hours.
pub fn purge_inbound(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM assistant_phone_inbound WHERE created_at < ?1",
        [time::format(now - chrono::Duration::days(7))],
    )?)
}
