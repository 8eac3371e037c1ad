//! Stock's writes, shared by its REST handlers and the assistant (issue 16). Permission
//! checks stay with the callers (the handler's `scope.require`, the assistant's at approval
//! time).

use super::model::{AdjustmentIn, AdjustmentOut};
use super::store::{self, Change, insufficient};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::http::extract::text;
use crate::ids::{AdjustmentId, StoreId, VariantId};
use crate::state::AppState;

/// Adds units to a variant's stock or takes them off hand, as `POST .../inventory/{id}/
/// adjustments` does: `delta` is a non-zero whole number of at most 1,000,000 either way and
/// `reason` 1 to 255 characters (422); taking more than is available is 409
/// `insufficient_stock`; an unknown variant is 404. The adjustment, its low-stock event when
/// the level crosses the threshold, and the `inventory.adjusted` audit entry are one
/// transaction.
pub async fn adjust_stock(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    variant: VariantId,
    input: AdjustmentIn,
) -> Result<AdjustmentOut, AppError> {
    if input.delta == 0 || !(-1_000_000..=1_000_000).contains(&input.delta) {
        return Err(AppError::field(
            "delta",
            "must be a non-zero whole number of units, at most 1000000 either way",
        ));
    }
    let reason = text("reason", &input.reason, 1, 255)?;
    let (actor, now) = (actor.clone(), st.clock.now());
    let delta = input.delta;
    st.db
        .write(move |tx| {
            let level = match store::change(tx, store, variant, delta, 0, now)? {
                Change::Done(level) => level,
                Change::Missing => return Err(AppError::not_found("variant")),
                Change::Short(level) => return Err(insufficient(&level, -delta)),
            };
            let id = AdjustmentId::new();
            store::log_adjustment(tx, store, id, &level, delta, &reason, now)?;
            audit::record(
                tx,
                &actor,
                "inventory.adjusted",
                "variant",
                &variant.to_string(),
                now,
            )?;
            Ok(AdjustmentOut {
                id,
                variant_id: variant,
                delta,
                reason,
                on_hand: level.on_hand,
                reserved: level.reserved,
                available: level.available,
                low_stock_threshold: level.low_stock_threshold,
                created_at: crate::time::format(now),
            })
        })
        .await
}
