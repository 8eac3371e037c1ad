//! SQL for setup: users, tenants, stores and memberships. The identity and organization
//! areas take these over as they grow.

use chrono::{DateTime, Utc};
use rusqlite::{Transaction, params};

use super::{SetupInput, SetupOutput};
use crate::auth::model::Locale;
pub use crate::auth::store::insert_user;
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{StoreId, TenantId, UserId};
use crate::time;

/// A deliberately loose check (one `@`, a dot in the domain, no spaces); the identity issue
/// owns the full rule.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.contains(char::is_whitespace)
        && !domain.contains('@')
        && s.len() <= 254
}

/// The URL-friendly name: lowercase, accents folded, words joined by dashes.
pub fn slugify(name: &str) -> String {
    let s = slug::slugify(name);
    if s.is_empty() { "store".into() } else { s }
}

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

pub fn add_store_member(
    tx: &Transaction<'_>,
    store_id: StoreId,
    user_id: UserId,
    role: &str,
    now: &str,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO store_members (store_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![store_id, user_id, role, now],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_fold_accents_and_join_with_dashes() {
        assert_eq!(
            super::slugify("Café São Paulo  Ltda."),
            "cafe-sao-paulo-ltda"
        );
        assert_eq!(super::slugify("!!!"), "store");
    }

    #[test]
    fn email_check_is_loose_but_not_empty() {
        assert!(super::looks_like_email("ana@example.com"));
        for bad in [
            "",
            "ana",
            "ana@",
            "@x.com",
            "ana@x",
            "a b@x.com",
            "ana@x.com.",
        ] {
            assert!(!super::looks_like_email(bad), "{bad}");
        }
    }
}
