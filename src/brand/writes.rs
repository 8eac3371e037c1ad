//! The brand system's writes, shared by its REST handlers and the assistant (an approved
//! generation): each saves a new version in one transaction with the `brand_system.updated`
//! event, its audit entry and the store's `brand_updated_at`. Permission checks stay with the
//! callers (the handler's `scope.require`, the assistant's at approval time).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::model::{BrandSystem, BrandSystemIn, BrandSystemOut};
use super::store::{self, NewVersion};
use super::system;
use crate::audit::Actor;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::extract::text;
use crate::ids::{StoreId, UserId};
use crate::state::AppState;
use crate::time;
use crate::webhooks;

/// The longest `prompt` and `summary` of a version, in characters after trimming.
pub const MAX_PROMPT_CHARS: usize = 4_000;
pub const MAX_SUMMARY_CHARS: usize = 500;

/// The payload of `brand_system.updated`: the version just saved, whole.
#[derive(Debug, Serialize)]
pub struct BrandSystemUpdated<'a> {
    pub version: i32,
    pub created_at: String,
    pub prompt: Option<&'a str>,
    pub summary: Option<&'a str>,
    pub system: &'a BrandSystem,
}

/// Version 1 of a new store: the default built from its name, by its creator. Not a save
/// of the merchant's: no event, and the onboarding checklist's `brand` step stays undone.
pub fn create_default(
    tx: &Tx<'_>,
    store: StoreId,
    name: &str,
    creator: UserId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let system = system::default_for(name, &time::format(now));
    store::insert_version(
        tx,
        &NewVersion {
            store,
            version: 1,
            system: &system,
            prompt: None,
            summary: Some("The default brand system"),
            created_by: creator,
        },
        now,
    )
}

/// The store's newest version, creating the default first for a store made before the
/// brand area existed (stores made since have it from their creation).
pub fn ensure_default(
    tx: &Tx<'_>,
    store: StoreId,
    by: UserId,
    now: DateTime<Utc>,
) -> Result<i32, AppError> {
    if let Some(v) = store::latest_version(tx, store)? {
        return Ok(v);
    }
    let name = store::store_name(tx, store)?.ok_or_else(|| AppError::not_found("store"))?;
    create_default(tx, store, &name, by, now)?;
    Ok(1)
}

/// Saves `system` (already checked) as the store's next version, by the merchant: in the
/// caller's transaction, with `brand_updated_at`, the event and the audit entry.
fn add_version(
    tx: &Tx<'_>,
    actor: &Actor,
    store: StoreId,
    mut system: BrandSystem,
    (prompt, summary): (Option<&str>, Option<&str>),
    now: DateTime<Utc>,
) -> Result<BrandSystemOut, AppError> {
    let latest = ensure_default(tx, store, actor.user_id, now)?;
    let version = latest.checked_add(1).ok_or_else(|| {
        AppError::conflict(ErrorCode::Conflict, "the brand system has no versions left")
    })?;
    let at = time::format(now);
    // `updated_at` says when this version was saved, whatever was sent.
    system.updated_at.clone_from(&at);
    store::insert_version(
        tx,
        &NewVersion {
            store,
            version,
            system: &system,
            prompt,
            summary,
            created_by: actor.user_id,
        },
        now,
    )?;
    store::mark_saved(tx, store, now)?;
    let data = BrandSystemUpdated {
        version,
        created_at: at,
        prompt,
        summary,
        system: &system,
    };
    let change = webhooks::Change {
        event: Event::BrandSystemUpdated,
        data: &data,
        action: "brand_system.updated",
        resource_id: &store.to_string(),
    };
    webhooks::publish_change(tx, actor, &change, now)?;
    store::current(tx, store)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("no version")))
}

/// Optional text: trimmed, `None` when blank, 422 past `max` characters.
fn optional_text(field: &str, v: Option<&str>, max: usize) -> Result<Option<String>, AppError> {
    v.map(|t| text(field, t, 0, max))
        .transpose()
        .map(|t| t.filter(|t| !t.is_empty()))
}

/// Saves a new version, as `PUT .../brand-system` does: the system's values are checked
/// (422 `validation_failed` naming each path), `prompt` is at most 4,000 characters and
/// `summary` 500.
pub async fn save(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    input: BrandSystemIn,
) -> Result<BrandSystemOut, AppError> {
    system::check(&input.system)?;
    let prompt = optional_text("prompt", input.prompt.as_deref(), MAX_PROMPT_CHARS)?;
    let summary = optional_text("summary", input.summary.as_deref(), MAX_SUMMARY_CHARS)?;
    let (actor, now) = (actor.clone(), st.clock.now());
    st.db
        .write(move |tx| {
            add_version(
                tx,
                &actor,
                store,
                input.system,
                (prompt.as_deref(), summary.as_deref()),
                now,
            )
        })
        .await
}

/// Saves version `version`'s system as a new version (spec 3, 4.7); 404 for a version the
/// store does not have.
pub async fn restore(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    version: i32,
) -> Result<BrandSystemOut, AppError> {
    let (actor, now) = (actor.clone(), st.clock.now());
    st.db
        .write(move |tx| {
            ensure_default(tx, store, actor.user_id, now)?;
            let old = store::get_version(tx, store, version)?
                .ok_or_else(|| AppError::not_found("brand system version"))?;
            let summary = format!("Restored version {version}");
            add_version(tx, &actor, store, old, (None, Some(&summary)), now)
        })
        .await
}

/// `setup --demo`: two versions saved after the default, as a merchant would have (the
/// demo records no events or audit entries, as the rest of it does not).
pub fn seed_demo(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let mut s = store::get_version(tx, store, 1)?
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("the demo store has no brand")))?;
    let saves = [
        (
            "#0F766E",
            "Warm and welcoming, with our teal",
            "Teal actions and a friendlier voice",
        ),
        (
            "#9A3412",
            "Earthy, handmade feel for the autumn collection",
            "Terracotta actions for the autumn collection",
        ),
    ];
    // Saved when the store was made: the demo has no history before it. Seed data, not the
    // merchant's save: the checklist's brand step stays for the developer to try, so the
    // demo's checklist is half done (issue 17).
    let at = now;
    for (i, (color, prompt, summary)) in (2..).zip(saves) {
        s.colors.aliases.action_primary = color.to_owned();
        s.colors.aliases.link = color.to_owned();
        s.identity.tagline = summary.to_owned();
        s.updated_at = time::format(at);
        store::insert_version(
            tx,
            &NewVersion {
                store,
                version: i,
                system: &s,
                prompt: Some(prompt),
                summary: Some(summary),
                created_by: user,
            },
            at,
        )?;
    }
    Ok(())
}
