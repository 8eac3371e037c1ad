//! SQL of the `setup` command: the first owner, organization and store in one transaction.

use chrono::{DateTime, Utc};
use rusqlite::{Transaction, params};

use super::{SetupInput, SetupOutput};
use crate::auth::model::Locale;
use crate::auth::store::insert_user;
use crate::http::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{StoreId, TenantId};
use crate::tenants::store::add_store_member;
use crate::text::slugify;
use crate::time;

#[tracing::instrument(skip_all)]
pub fn create_owner(
    tx: &Transaction<'_>,
    now: DateTime<Utc>,
    input: &SetupInput,
    password_hash: &str,
) -> Result<SetupOutput, AppError> {
    let user_id = insert_user(tx, now, &input.email, password_hash, Locale::PtBr)?.id;
    let (tenant_id, store_id) = (TenantId::new(), StoreId::new());
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO tenants (id, name, slug, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
        params![tenant_id, input.org_name, slugify(&input.org_name), now],
    )
    .on_constraint("tenants.slug", |_| {
        AppError::conflict(
            ErrorCode::SlugTaken,
            "an organization with this name already exists",
        )
    })?;
    crate::db::exec(
        tx,
        "INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES (?1, ?2, 'owner', ?3)",
        params![tenant_id, user_id, now],
    )?;
    crate::db::exec(
        tx,
        "INSERT INTO stores (id, tenant_id, name, slug, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![
            store_id,
            tenant_id,
            input.store_name,
            slugify(&input.store_name),
            now
        ],
    )?;
    add_store_member(tx, store_id, user_id, "owner", &now)?;
    Ok(SetupOutput {
        user_id,
        tenant_id,
        store_id,
    })
}
