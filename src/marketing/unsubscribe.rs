//! The signed one-click unsubscribe link every marketing mail carries (RFC 8058), and the
//! public routes it opens: `GET /unsubscribe/{token}` (a confirmation page with a button)
//! and `POST /unsubscribe/{token}` (what the button and a mail client's one-click send).
//!
//! The token is the store and customer ids with an HMAC over both under the server key, so
//! it names one customer of one store and cannot be made for another; it does not expire
//! (an unsubscribe link must keep working). A token that does not verify, or names a
//! customer since deleted, is 404.

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::audit::Actor;
use crate::customers::store::{self as customers, Fields};
use crate::error::AppError;
use crate::events::Event;
use crate::http::extract::Path;
use crate::ids::{CustomerId, StoreId};
use crate::state::AppState;
use crate::webhooks;

type ErrorBody = crate::error::ErrorBody;

fn signature(key: &[u8], store: StoreId, customer: CustomerId) -> Vec<u8> {
    crate::secrets::keyed_hash(key, format!("unsubscribe:{store}:{customer}").as_bytes())
}

/// The token of a customer's link: both ids (16 bytes each) and their signature, base64url.
pub fn token(key: &[u8], store: StoreId, customer: CustomerId) -> String {
    let mut raw = Vec::with_capacity(64);
    raw.extend_from_slice(store.0.as_bytes());
    raw.extend_from_slice(customer.0.as_bytes());
    raw.extend_from_slice(&signature(key, store, customer));
    URL_SAFE_NO_PAD.encode(raw)
}

/// `{origin}/v1/unsubscribe/{token}`.
pub fn link(key: &[u8], origin: &str, store: StoreId, customer: CustomerId) -> String {
    format!("{origin}/v1/unsubscribe/{}", token(key, store, customer))
}

/// The store and customer a token names, if it is ours (compared in constant time).
pub fn verify(key: &[u8], token: &str) -> Option<(StoreId, CustomerId)> {
    // A real token is 86 characters; a longer one is not decoded at all.
    if token.len() > 200 {
        return None;
    }
    let raw = URL_SAFE_NO_PAD.decode(token).ok()?;
    if raw.len() < 33 {
        return None;
    }
    let store = StoreId(uuid::Uuid::from_slice(&raw[..16]).ok()?);
    let customer = CustomerId(uuid::Uuid::from_slice(&raw[16..32]).ok()?);
    crate::secrets::same(&signature(key, store, customer), &raw[32..]).then_some((store, customer))
}

fn not_found() -> AppError {
    AppError::not_found("unsubscribe link")
}

fn page(title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><title>{title}</title></head>\
         <body style=\"font-family: sans-serif; max-width: 32rem; margin: 3rem auto\">\
         <h1>{title}</h1>{body}</body></html>"
    );
    let mut res = (StatusCode::OK, html).into_response();
    let h = res.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The confirmation page: what unsubscribing does, and a button that POSTs to the same
/// link. A GET changes nothing (mail scanners open links).
#[utoipa::path(get, path = "/unsubscribe/{token}", tag = "marketing",
    params(("token" = String, Path, description = "The token of a marketing mail's unsubscribe link")),
    responses((status = 200, description = "A confirmation page", content_type = "text/html", body = String),
              (status = 404, body = ErrorBody)))]
pub async fn unsubscribe_page(
    State(st): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let (store, customer) = verify(&st.hmac_key, &token).ok_or_else(not_found)?;
    let found = st
        .db
        .read(move |c| customers::get(c, store, customer))
        .await?
        .ok_or_else(not_found)?;
    let body = if found.accepts_marketing {
        // The token is base64url: safe inside an attribute as is.
        format!(
            "<p>Stop receiving marketing e-mail from this store?</p>\
             <form method=\"post\" action=\"/v1/unsubscribe/{token}\">\
             <button type=\"submit\">Unsubscribe</button></form>"
        )
    } else {
        "<p>You are unsubscribed: this store sends you no marketing e-mail.</p>".to_owned()
    };
    Ok(page("Unsubscribe", &body))
}

/// Unsubscribes the link's customer: `accepts_marketing` becomes false and
/// `customers.updated` fires, once; repeating it changes nothing. Accepts RFC 8058's
/// one-click body (`List-Unsubscribe=One-Click`) or none; the body is not read.
#[utoipa::path(post, path = "/unsubscribe/{token}", tag = "marketing",
    params(("token" = String, Path, description = "The token of a marketing mail's unsubscribe link")),
    responses((status = 200, description = "A page confirming it", content_type = "text/html", body = String),
              (status = 404, body = ErrorBody)))]
pub async fn unsubscribe(
    State(st): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let (store, customer) = verify(&st.hmac_key, &token).ok_or_else(not_found)?;
    let now = st.clock.now();
    st.db
        .write(move |tx| {
            let c = customers::get(tx, store, customer)?.ok_or_else(not_found)?;
            if !c.accepts_marketing {
                return Ok(());
            }
            let f = Fields {
                accepts_marketing: Some(false),
                ..Fields::default()
            };
            customers::update(tx, store, customer, &f, now)?;
            let c = customers::get(tx, store, customer)?.ok_or_else(not_found)?;
            let tenant = crate::orders::store::tenant_of(tx, store)?;
            let actor = Actor {
                store_id: Some(store),
                ..Actor::system(tenant, "unsubscribe_link")
            };
            let change = webhooks::Change {
                event: Event::CustomersUpdated,
                data: &c,
                action: "customer.unsubscribed",
                resource_id: &customer.to_string(),
            };
            webhooks::publish_change(tx, &actor, &change, now)
        })
        .await?;
    Ok(page(
        "Unsubscribed",
        "<p>You are unsubscribed: this store sends you no more marketing e-mail.</p>",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_customer_and_nothing_else() {
        let (key, store, customer) = (b"server key".as_slice(), StoreId::new(), CustomerId::new());
        let t = token(key, store, customer);
        assert_eq!(verify(key, &t), Some((store, customer)));
        assert_eq!(verify(b"other key", &t), None);
        let mut raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        raw[20] ^= 1; // another customer, same signature
        assert_eq!(verify(key, &URL_SAFE_NO_PAD.encode(&raw)), None);
        assert_eq!(verify(key, "not base64!"), None);
        assert_eq!(verify(key, ""), None);
        assert!(
            link(key, "https://a.example", store, customer)
                .starts_with("https://a.example/v1/unsubscribe/")
        );
    }
}
