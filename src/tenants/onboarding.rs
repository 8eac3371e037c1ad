//! The store's onboarding checklist (`GET /stores/{id}/onboarding`; spec 4.4, issue 17).
//! Nothing is stored: each step is read from the store's data when asked, in one query,
//! so a step flips as soon as its data appears (or back when it goes).

use axum::extract::State;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::model::{OnboardingOut, OnboardingStep, OnboardingStepKey};
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::Json;
use crate::ids::StoreId;
use crate::state::AppState;
use crate::time;

/// Every step: its key, title and the path (after `/v1/stores/{id}`) that does it.
const STEPS: [(OnboardingStepKey, &str, &str); 8] = [
    (
        OnboardingStepKey::Products,
        "Add a product with stock.",
        "/products",
    ),
    (
        OnboardingStepKey::Payments,
        "Choose the payment methods you accept.",
        "",
    ),
    (
        OnboardingStepKey::Freight,
        "Set up your shipping zones.",
        "",
    ),
    // The brand area's route (spec 4.7, issue 18).
    (
        OnboardingStepKey::Brand,
        "Set up your brand.",
        "/brand-system",
    ),
    (
        OnboardingStepKey::MessagingApp,
        "Connect your messaging app.",
        "/channels",
    ),
    (OnboardingStepKey::Team, "Invite your team.", "/invites"),
    (
        OnboardingStepKey::CustomDomain,
        "Connect your own domain.",
        "",
    ),
    (
        OnboardingStepKey::FirstOrder,
        "Get your first paid order.",
        "/orders",
    ),
];

/// When each step became done (None while it is not), in the order of [`STEPS`].
#[tracing::instrument(skip_all, fields(store_id = %store))]
pub fn done_at(
    c: &Connection,
    store: StoreId,
    now: DateTime<Utc>,
) -> Result<[Option<String>; 8], AppError> {
    // MIN() over a UNION ignores NULLs, where the scalar min(a, b) would return NULL.
    let row = c
        .prepare_cached(
            "SELECT
                 (SELECT MIN(p.created_at) FROM products p
                  WHERE p.store_id = s.id AND p.status = 'active'
                    AND EXISTS (SELECT 1 FROM variants v
                                WHERE v.product_id = p.id AND v.on_hand - v.reserved > 0)),
                 s.payment_methods_set_at,
                 s.shipping_zones_set_at,
                 s.brand_updated_at,
                 (SELECT MIN(ch.created_at) FROM channels ch
                  WHERE ch.store_id = s.id AND ch.kind = 'msgapp' AND ch.enabled = 1),
                 (SELECT MIN(at) FROM (
                      SELECT (SELECT m.created_at FROM store_members m WHERE m.store_id = s.id
                              ORDER BY m.created_at, m.user_id LIMIT 1 OFFSET 1) AS at
                      UNION ALL
                      SELECT MIN(i.created_at) FROM invites i
                      WHERE i.store_id = s.id AND i.accepted_at IS NULL AND i.expires_at > ?2)),
                 s.custom_domain_set_at,
                 (SELECT MIN(pay.created_at) FROM payments pay
                  WHERE pay.store_id = s.id AND pay.status = 'approved')
             FROM stores s WHERE s.id = ?1",
        )?
        .query_row(params![store, time::format(now)], |r| {
            Ok([
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ])
        })?;
    Ok(row)
}

/// The checklist built from [`done_at`].
pub fn checklist(store: StoreId, done: [Option<String>; 8]) -> OnboardingOut {
    let steps: Vec<OnboardingStep> = STEPS
        .iter()
        .zip(done)
        .map(|((key, title, path), at)| OnboardingStep {
            key: *key,
            title,
            done: at.is_some(),
            done_at: at,
            action_path: format!("/v1/stores/{store}{path}"),
        })
        .collect();
    let completed = steps.iter().filter(|s| s.done).count();
    OnboardingOut {
        completed: i64::try_from(completed).unwrap_or(i64::MAX),
        total: i64::try_from(steps.len()).unwrap_or(i64::MAX),
        steps,
    }
}

/// The store's setup checklist: products, payments, freight, brand, messaging app, team,
/// custom domain and first order, each computed from the store's data now. Any member may
/// read it, as they may read the store, and so may the store's API tokens.
#[utoipa::path(get, path = "/stores/{store_id}/onboarding", tag = "stores", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)),
    responses((status = 200, body = OnboardingOut), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_onboarding(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<OnboardingOut>, AppError> {
    let (store, now) = (scope.store_id, st.clock.now());
    let done = st.db.read(move |c| done_at(c, store, now)).await?;
    Ok(Json(checklist(store, done)))
}
