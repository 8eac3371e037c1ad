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

/// utoipa makes a handler's first doc paragraph its `summary`; viewers list summaries in
/// their navigation, so a paragraph there is unreadable. Keeps the first sentence as the
/// summary and moves the whole paragraph, on one line, ahead of any description.
pub fn tidy_summaries(doc: &mut utoipa::openapi::OpenApi) {
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for op in ops.into_iter().flatten() {
            let Some(summary) = op.summary.take() else {
                continue;
            };
            let paragraph = summary.split_whitespace().collect::<Vec<_>>().join(" ");
            let first = first_sentence(&paragraph);
            if first.len() < paragraph.len() {
                op.description = Some(match op.description.take() {
                    Some(rest) => format!("{paragraph}\n\n{rest}"),
                    None => paragraph.clone(),
                });
            }
            op.summary = Some(first.to_owned());
        }
    }
}

/// Up to the first `. ` (or `; `) that ends a sentence, outside code and parentheses,
/// without the stop; all of `s` if none.
fn first_sentence(s: &str) -> &str {
    let (mut in_code, mut depth) = (false, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '(' if !in_code => depth += 1,
            ')' if !in_code => depth = depth.saturating_sub(1),
            '.' | ';' if !in_code && depth == 0 && s[i + 1..].starts_with(' ') => {
                // "e.g. " and "i.e. " do not end a sentence.
                let before = &s[..i];
                if !(before.ends_with("e.g") || before.ends_with("i.e")) {
                    return before;
                }
            }
            _ => {}
        }
    }
    s.strip_suffix('.').unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::first_sentence;

    #[test]
    fn a_summary_is_the_first_sentence() {
        assert_eq!(
            first_sentence("Refunds the order. The refund is held."),
            "Refunds the order"
        );
        assert_eq!(first_sentence("One purchase order."), "One purchase order");
        assert_eq!(
            first_sentence("Lists `a. b` items; newest first."),
            "Lists `a. b` items"
        );
        assert_eq!(
            first_sentence("The cart (`X`; a wrong token is 404). More."),
            "The cart (`X`; a wrong token is 404)"
        );
        assert_eq!(
            first_sentence("Sets a field, e.g. the name. Then more."),
            "Sets a field, e.g. the name"
        );
    }
}
