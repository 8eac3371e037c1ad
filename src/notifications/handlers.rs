//! Notification handlers: the caller's feed in a store, marking it read, and the caller's
//! preferences.

use axum::extract::State;

use super::model::{
    Channels, Kind, NotificationFilter, NotificationOut, PreferencesIn, PreferencesOut, ReadIn,
    ReadOut,
};
use super::store;
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{StoreScope, UserSession};
use crate::http::extract::Json;
use crate::http::page::{Page, PageQuery, Paged};
use crate::ids::{StoreId, UserId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The member behind the request. A feed is a person's: a store API token acts for an
/// integration, not a member, so it is refused (403) rather than shown an empty feed that
/// would hide the mistake.
fn member(scope: &StoreScope) -> Result<UserId, AppError> {
    if scope.principal.is_store_token() {
        return Err(AppError::new(
            ErrorCode::MissingPermission,
            "notifications belong to a signed-in member; a store API token has none",
        ));
    }
    Ok(scope.principal.user_id)
}

/// The caller's notifications in the store, newest first; `unread=true` for those not read
/// yet (`include_total=true` counts them: the badge). Any member may read their own feed;
/// nobody sees another member's, and a store API token, which is nobody's feed, gets 403.
#[utoipa::path(get, path = "/stores/{store_id}/notifications", tag = "notifications",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), PageQuery, NotificationFilter),
    responses((status = 200, body = Page<NotificationOut>), (status = 403, body = ErrorBody)))]
pub async fn list_notifications(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, filter): Paged<NotificationFilter>,
) -> Result<Json<Page<NotificationOut>>, AppError> {
    let user = member(&scope)?;
    let (store, unread) = (scope.store_id, filter.unread.unwrap_or(false));
    let page = page
        .list(
            &st.db,
            &format!("notifications:{store}:{user}:{unread}"),
            move |c, after, limit, offset| {
                store::list(c, store, user, unread, after, limit, offset)
            },
            move |c| store::count(c, store, user, unread),
            |n| (n.created_at.clone(), n.id.to_string()),
            |n| n,
        )
        .await?;
    Ok(Json(page))
}

/// Marks the caller's notifications read: `{"ids": [...]}` (at most 200) or
/// `{"all": true}`. Ids of another member, another store or none at all are skipped, not
/// refused: the answer counts what changed, and a request repeated changes nothing.
#[utoipa::path(post, path = "/stores/{store_id}/notifications/read", tag = "notifications",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = ReadIn,
    responses((status = 200, body = ReadOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn read_notifications(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<ReadIn>,
) -> Result<Json<ReadOut>, AppError> {
    let user = member(&scope)?;
    let ids = match (input.ids, input.all) {
        (Some(_), Some(_)) | (None, None | Some(false)) => {
            return Err(AppError::field("ids", "give ids, or all: true"));
        }
        (None, Some(true)) => None,
        (Some(ids), None) => {
            if ids.len() > super::model::MAX_READ_IDS {
                return Err(AppError::field(
                    "ids",
                    format!("at most {} ids at once", super::model::MAX_READ_IDS),
                ));
            }
            Some(ids)
        }
    };
    let (store, now) = (scope.store_id, st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let marked = store::mark_read(tx, store, user, ids.as_deref(), now)?;
            let unread = store::count(tx, store, user, true)?;
            Ok(ReadOut { marked, unread })
        })
        .await?;
    Ok(Json(out))
}

/// The caller's channels for every kind (in the feed by default; e-mail and the messaging
/// app are opted into). They hold in every store the caller belongs to.
#[utoipa::path(get, path = "/me/notification-preferences", tag = "me", security(("bearer" = [])),
    responses((status = 200, body = PreferencesOut), (status = 401, body = ErrorBody)))]
pub async fn get_preferences(
    State(st): State<AppState>,
    UserSession(p): UserSession,
) -> Result<Json<PreferencesOut>, AppError> {
    let user = p.user_id;
    let kinds = st.db.read(move |c| store::preferences(c, user)).await?;
    Ok(Json(PreferencesOut { kinds }))
}

/// Sets the channels of the kinds named (each with `in_app`, `email` and `msgapp`); kinds
/// left out keep theirs. An unknown kind is 422 naming `kinds.<name>`. A messaging-app copy
/// goes only to a verified number (the messaging-app second factor's).
#[utoipa::path(put, path = "/me/notification-preferences", tag = "me", security(("bearer" = [])),
    request_body = PreferencesIn,
    responses((status = 200, body = PreferencesOut), (status = 422, body = ErrorBody)))]
pub async fn update_preferences(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Json(input): Json<PreferencesIn>,
) -> Result<Json<PreferencesOut>, AppError> {
    let mut changes: Vec<(Kind, Channels)> = Vec::new();
    let mut unknown = Vec::new();
    for (name, ch) in input.kinds {
        match Kind::parse(&name) {
            Some(k) => changes.push((k, ch)),
            None => unknown.push((format!("kinds.{name}"), "is not a notification kind")),
        }
    }
    if !unknown.is_empty() {
        // At most the first few: the names come from the request.
        unknown.truncate(5);
        return Err(AppError::validation(unknown));
    }
    let (user, now) = (p.user_id, st.clock.now());
    let kinds = st
        .db
        .write(move |tx| {
            for (kind, ch) in changes {
                store::set_preference(tx, user, kind, ch, now)?;
            }
            store::preferences(tx, user)
        })
        .await?;
    Ok(Json(PreferencesOut { kinds }))
}
