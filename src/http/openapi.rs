//! The OpenAPI 3.1 document of the admin API, generated from the handlers' annotations
//! (utoipa) and served at `GET /v1/openapi/admin.json`. Paths are relative to the `/v1`
//! server entry; operational root paths carry their own `servers` override.

use utoipa::OpenApi;
use utoipa::openapi::server::Server;

use crate::error::{ErrorBody, ErrorCode};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "merchant-admin admin API",
        description = "The merchant back office API: sessions, store administration, inbox, webhooks.

Retries (spec 8): every POST accepts `Idempotency-Key`. A repeat within 24 hours with the \
same key and request replays the first response (`Idempotent-Replayed: true`) and changes \
nothing; the same key with another request is 422 `idempotency_key_reused`. Creates that \
hand out a secret (`POST /stores/{store_id}/api-tokens`, `.../api-tokens/{token_id}/rotate`, \
`.../webhooks`, `.../invites`) are replayed too: their response is kept sealed until the \
window ends, so a retry returns the same secret and creates nothing.

Sign-in endpoints keep their own retry rules and their responses are never stored or \
replayed, whatever the key: `POST /auth/login`, `POST /invites/{token}/accept` and the \
second-factor verify endpoints (`/auth/2fa/totp/verify`, `/auth/2fa/recovery/verify`, \
`/auth/otp/verify`) run again (a challenge already used answers `invalid_challenge`), and \
`POST /auth/refresh` retried within 30 s with the same refresh token issues a fresh pair \
and retires the pair the client never received.",
    ),
    servers((url = "/v1", description = "API version 1")),
    tags((name = "billing", description = "Plans, subscriptions and invoices, in Stripe \
Billing's words. A *plan* has a *price* per billing cycle (`monthly`, or `annual` = 10 \
months) in BRL cents, and limits. Each organization has one *subscription* to a plan: its \
status (`trialing`, `active`, `past_due`, `suspended`, `canceled`), its current *period* \
(`current_period_start`, `current_period_end`) and what it uses against the limits. An \
*invoice* bills one plan for one period (`billing_reason`: `subscription_create`, \
`subscription_cycle`, `subscription_update` for an upgrade's proration, \
`subscription_resume`); while `open` it carries a Pix BR Code to pay it with; paid, it is \
`paid`; withdrawn, `void`. The platform webhook receives `subscription.updated` and \
`invoice.paid`.")),
    components(schemas(ErrorBody, ErrorCode)),
    modifiers(&BearerAuth),
)]
pub struct ApiDoc;

/// Declares the `bearer` security scheme that authenticated operations refer to.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// Gives every path of `root` a `servers: [{url: "/"}]` override and adds it to `doc`.
pub fn merge_root_paths(doc: &mut utoipa::openapi::OpenApi, root: utoipa::openapi::OpenApi) {
    for (path, mut item) in root.paths.paths {
        item.servers = Some(vec![Server::new("/")]);
        doc.paths.paths.insert(path, item);
    }
}
