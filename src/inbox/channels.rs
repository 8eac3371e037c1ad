//! Channel handlers: where conversations come from (`stores.edit` for every route).

use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::model::{ChannelIn, ChannelKind, ChannelOut, ChannelPatch, ChannelSettings};
use super::store::{self, ChannelChange, NewChannel};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{ChannelId, StoreId};
use crate::secrets::SecretBox;
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;
/// Settings by name, as stored (shown) or sealed (secret).
type Settings = Map<String, Value>;

fn not_found() -> AppError {
    AppError::not_found("channel")
}

/// `https://shop.example` or `http://localhost:3000`: a scheme, a host and an optional port,
/// nothing else, lowercased as browsers send it in `Origin`.
fn origins(list: &[String]) -> Result<Vec<String>, AppError> {
    if list.len() > 50 {
        return Err(AppError::field("allowed_origins", "at most 50 origins"));
    }
    let mut out = Vec::new();
    for o in list {
        let bad = || {
            AppError::field(
                "allowed_origins",
                format!("{o:?} is not an origin such as https://shop.example"),
            )
        };
        let url = url::Url::parse(o).map_err(|_| bad())?;
        let origin = url.origin();
        if !origin.is_tuple()
            || !matches!(url.scheme(), "http" | "https")
            || url.path() != "/"
            || url.query().is_some()
            || o.trim_end_matches('/').len() != origin.ascii_serialization().len()
        {
            return Err(bad());
        }
        let o = origin.ascii_serialization();
        if !out.contains(&o) {
            out.push(o);
        }
    }
    Ok(out)
}

/// The settings a kind takes, split into what may be shown and what is sealed. `old` holds
/// the values an update keeps.
fn split_settings(
    kind: ChannelKind,
    s: ChannelSettings,
    old_public: &Map<String, Value>,
    old_secrets: Map<String, Value>,
) -> Result<(Settings, Settings), AppError> {
    let (public_keys, secret_keys): (&[&str], &[&str]) = match kind {
        ChannelKind::StorefrontChat => (&[], &[]),
        ChannelKind::Msgapp => (&["phone_number_id"], &["app_secret", "verify_token"]),
        ChannelKind::Email => (&["address"], &["inbound_secret"]),
    };
    let given = [
        ("phone_number_id", s.phone_number_id),
        ("app_secret", s.app_secret),
        ("verify_token", s.verify_token),
        ("address", s.address),
        ("inbound_secret", s.inbound_secret),
    ];
    let (mut public, mut secrets) = (old_public.clone(), old_secrets);
    for (name, value) in given {
        let Some(v) = value else { continue };
        let field = format!("settings.{name}");
        let v = text(&field, &v, 1, 255)?;
        if name == "address" && !crate::text::looks_like_email(&v) {
            return Err(AppError::field(field, "is not an e-mail address"));
        }
        // It becomes a path segment of the provider's send URL: digits only, as the
        // provider's ids are, so it cannot name another endpoint.
        if name == "phone_number_id" && (v.len() > 32 || !v.bytes().all(|b| b.is_ascii_digit())) {
            return Err(AppError::field(
                field,
                "is the provider's numeric id of the number",
            ));
        }
        if public_keys.contains(&name) {
            public.insert(name.to_owned(), Value::String(v));
        } else if secret_keys.contains(&name) {
            secrets.insert(name.to_owned(), Value::String(v));
        } else {
            return Err(AppError::field(
                field,
                format!("a {} channel has no such setting", kind.as_str()),
            ));
        }
    }
    for name in public_keys.iter().chain(secret_keys) {
        if !public.contains_key(*name) && !secrets.contains_key(*name) {
            return Err(AppError::field(
                format!("settings.{name}"),
                format!("is required for a {} channel", kind.as_str()),
            ));
        }
    }
    Ok((public, secrets))
}

/// A messaging-app number serves one channel, and never the one the server sends sign-in
/// codes from: replies go out with the server's provider token, so a store may not claim a
/// number another store (or the operator) uses.
fn number_free(
    tx: &crate::db::Tx<'_>,
    cfg: &crate::config::Config,
    public: &Settings,
    id: ChannelId,
) -> Result<(), AppError> {
    let Some(number) = public.get("phone_number_id").and_then(Value::as_str) else {
        return Ok(());
    };
    let sign_in = match &cfg.msgapp {
        crate::config::MsgappConfig::Cloud {
            phone_number_id, ..
        } => phone_number_id == number,
        crate::config::MsgappConfig::Log => false,
    };
    if sign_in || store::number_taken(tx, number, id)? {
        return Err(AppError::field(
            "settings.phone_number_id",
            "is already used by another channel or by this server's sign-in codes",
        ));
    }
    Ok(())
}

fn seal(b: &SecretBox, id: ChannelId, secrets: &Map<String, Value>) -> Option<Vec<u8>> {
    (!secrets.is_empty())
        .then(|| b.seal(&Value::Object(secrets.clone()).to_string(), &id.to_string()))
}

/// A channel's secret settings, opened.
pub fn open_secrets(
    b: &SecretBox,
    id: ChannelId,
    sealed: Option<&[u8]>,
) -> Result<Map<String, Value>, AppError> {
    let Some(sealed) = sealed else {
        return Ok(Map::new());
    };
    let plain = b.open_sealed(sealed, &id.to_string()).ok_or_else(|| {
        AppError::internal(anyhow::anyhow!(
            "channel {id}'s secrets do not open with secrets.key"
        ))
    })?;
    serde_json::from_str(&plain).map_err(AppError::internal)
}

/// Creates a channel. A chat channel gets its public `key` (what the widget's `data-key`
/// names); secrets in `settings` are sealed and never shown again.
#[utoipa::path(post, path = "/stores/{store_id}/channels", tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = ChannelIn,
    responses((status = 201, body = ChannelOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_channel(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<ChannelIn>,
) -> Result<(StatusCode, Json<ChannelOut>), AppError> {
    scope.require(Permission::StoresEdit)?;
    let name = text("name", &input.name, 1, 120)?;
    let chat = input.kind == ChannelKind::StorefrontChat;
    let allowed = match (&input.allowed_origins, chat) {
        (Some(o), true) => origins(o)?,
        (Some(_), false) => {
            return Err(AppError::field(
                "allowed_origins",
                "only a storefront_chat channel has allowed origins",
            ));
        }
        (None, _) => Vec::new(),
    };
    let (public, secrets) = split_settings(
        input.kind,
        input.settings.unwrap_or_default(),
        &Map::new(),
        Map::new(),
    )?;
    let id = ChannelId::new();
    let sealed = seal(&st.secret_box, id, &secrets);
    let key = chat.then(|| crate::secrets::new_token("chk_"));
    let (store_id, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let cfg = st.cfg.clone();
    let out = st
        .db
        .write(move |tx| {
            number_free(tx, &cfg, &public, id)?;
            store::insert_channel(
                tx,
                &NewChannel {
                    id,
                    store: store_id,
                    kind: input.kind,
                    name: &name,
                    key: key.as_deref(),
                    allowed_origins: &allowed,
                    settings: &public,
                    secrets: sealed.as_deref(),
                },
                now,
            )?;
            audit::record(
                tx,
                &actor,
                "channel.created",
                "channel",
                &id.to_string(),
                now,
            )?;
            store::get_channel(tx, store_id, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// The store's channels, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/channels", tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<ChannelOut>), (status = 403, body = ErrorBody)))]
pub async fn list_channels(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<ChannelOut>>, AppError> {
    scope.require(Permission::StoresEdit)?;
    let store_id = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("channels:{store_id}"),
            move |c, after, limit, offset| store::list_channels(c, store_id, after, limit, offset),
            move |c| store::count_channels(c, store_id),
            |ch| (ch.created_at.clone(), ch.id.to_string()),
            |ch| ch,
        )
        .await?;
    Ok(Json(page))
}

/// One channel, with its settings (secrets never leave the server).
#[utoipa::path(get, path = "/stores/{store_id}/channels/{channel_id}", tag = "inbox",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("channel_id" = ChannelId, Path)),
    responses((status = 200, body = ChannelOut), (status = 404, body = ErrorBody)))]
pub async fn get_channel(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ChannelId)>,
) -> Result<Json<ChannelOut>, AppError> {
    scope.require(Permission::StoresEdit)?;
    let (store_id, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_channel(c, store_id, id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Changes a channel. `settings` replaces the settings it names and keeps the others;
/// `enabled: false` stops new conversations and the widget.
#[utoipa::path(patch, path = "/stores/{store_id}/channels/{channel_id}", tag = "inbox",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("channel_id" = ChannelId, Path)),
    request_body = ChannelPatch,
    responses((status = 200, body = ChannelOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_channel(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ChannelId)>,
    Json(input): Json<ChannelPatch>,
) -> Result<Json<ChannelOut>, AppError> {
    scope.require(Permission::StoresEdit)?;
    let name = input
        .name
        .as_deref()
        .map(|n| text("name", n, 1, 120))
        .transpose()?;
    let allowed = input.allowed_origins.as_deref().map(origins).transpose()?;
    let (store_id, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let (sb, cfg) = (st.secret_box.clone(), st.cfg.clone());
    let out = st
        .db
        .write(move |tx| {
            let current = store::get_channel(tx, store_id, id)?.ok_or_else(not_found)?;
            if allowed.is_some() && current.kind != ChannelKind::StorefrontChat {
                return Err(AppError::field(
                    "allowed_origins",
                    "only a storefront_chat channel has allowed origins",
                ));
            }
            let mut change = ChannelChange {
                name,
                enabled: input.enabled,
                allowed_origins: allowed,
                ..ChannelChange::default()
            };
            if let Some(s) = input.settings {
                let sealed = store::channel_secrets(tx, store_id, id)?;
                let old = open_secrets(&sb, id, sealed.as_deref())?;
                let (public, secrets) = split_settings(current.kind, s, &current.settings, old)?;
                number_free(tx, &cfg, &public, id)?;
                change.settings = Some(public);
                change.secrets = seal(&sb, id, &secrets);
            }
            store::update_channel(tx, store_id, id, &change, now)?;
            audit::record(
                tx,
                &actor,
                "channel.updated",
                "channel",
                &id.to_string(),
                now,
            )?;
            store::get_channel(tx, store_id, id)?.ok_or_else(not_found)
        })
        .await?;
    // Open widget sockets reconnect and are checked against the channel as it now is.
    st.hub.close_widgets(store_id, id);
    Ok(Json(out))
}

/// Deletes a channel with its conversations and their messages.
#[utoipa::path(delete, path = "/stores/{store_id}/channels/{channel_id}", tag = "inbox",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("channel_id" = ChannelId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_channel(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ChannelId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::StoresEdit)?;
    let (store_id, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete_channel(tx, store_id, id)? {
                return Err(not_found());
            }
            audit::record(
                tx,
                &actor,
                "channel.deleted",
                "channel",
                &id.to_string(),
                now,
            )
        })
        .await?;
    st.hub.close_widgets(store_id, id);
    Ok(StatusCode::NO_CONTENT)
}
