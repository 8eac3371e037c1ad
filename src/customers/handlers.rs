//! Customer handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{Address, CustomerFilter, CustomerIn, CustomerOut, CustomerPatch, email, phone};
use super::store::{self, Fields};
use crate::audit::Actor;
use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{CustomerId, StoreId};
use crate::state::AppState;
use crate::webhooks;

type ErrorBody = crate::error::ErrorBody;

fn not_found() -> AppError {
    AppError::not_found("customer")
}

/// Each tag as [`super::model::tag`] keeps it, repeats once, at most `MAX_TAGS`.
fn tags(t: &[String]) -> Result<Vec<String>, AppError> {
    if t.len() > store::MAX_TAGS {
        return Err(AppError::field("tags", "at most 50 tags"));
    }
    let mut out: Vec<String> = Vec::with_capacity(t.len());
    for (i, raw) in t.iter().enumerate() {
        let tag = super::model::tag(raw).map_err(|m| AppError::field(format!("tags[{i}]"), m))?;
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    Ok(out)
}

fn addresses(a: &[Address]) -> Result<Vec<Address>, AppError> {
    if a.len() > 20 {
        return Err(AppError::field("addresses", "at most 20 addresses"));
    }
    let long = a.iter().flat_map(|x| {
        [
            &x.name,
            &x.line1,
            &x.line2,
            &x.city,
            &x.region,
            &x.postal_code,
            &x.country,
            &x.phone,
        ]
    });
    if long.flatten().any(|s| s.chars().count() > 255) {
        return Err(AppError::field(
            "addresses",
            "fields are at most 255 characters",
        ));
    }
    Ok(a.to_vec())
}

/// The store's customers, newest first; `search` matches name, e-mail or phone.
#[utoipa::path(get, path = "/stores/{store_id}/customers", tag = "customers", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, CustomerFilter),
    responses((status = 200, body = Page<CustomerOut>), (status = 403, body = ErrorBody)))]
pub async fn list_customers(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<CustomerFilter>,
) -> Result<Json<Page<CustomerOut>>, AppError> {
    scope.require(Permission::CustomersRead)?;
    let store = scope.store_id;
    let search = f
        .search
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let s2 = search.clone();
    let page = page
        .list(
            &st.db,
            &format!("customers:{store}:{}", search.as_deref().unwrap_or("")),
            move |c, after, limit, offset| {
                store::list(c, store, search.as_deref(), after, limit, offset)
            },
            move |c| store::count(c, store, s2.as_deref()),
            |c| (c.created_at.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a customer.
#[utoipa::path(post, path = "/stores/{store_id}/customers", tag = "customers", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = CustomerIn,
    responses((status = 201, body = CustomerOut), (status = 409, body = ErrorBody, description = "`conflict`: the e-mail is taken"),
              (status = 422, body = ErrorBody)))]
pub async fn create_customer(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<CustomerIn>,
) -> Result<(StatusCode, Json<CustomerOut>), AppError> {
    scope.require(Permission::CustomersWrite)?;
    let f = Fields {
        name: Some(text("name", &input.name, 1, 255)?),
        email: Some(input.email.as_deref().map(email).transpose()?.flatten()),
        phone: Some(input.phone.as_deref().map(phone).transpose()?.flatten()),
        addresses: Some(addresses(input.addresses.as_deref().unwrap_or_default())?),
        accepts_marketing: input.accepts_marketing,
        tags: Some(tags(input.tags.as_deref().unwrap_or_default())?),
    };
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let id = CustomerId::new();
            store::insert(tx, store, id, &f, now)?;
            let c = store::get(tx, store, id)?.ok_or_else(not_found)?;
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event: Event::CustomersCreated,
                    data: &c,
                    action: "customer.created",
                    resource_id: &id.to_string(),
                },
                now,
            )?;
            Ok(c)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One customer.
#[utoipa::path(get, path = "/stores/{store_id}/customers/{customer_id}", tag = "customers",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("customer_id" = CustomerId, Path)),
    responses((status = 200, body = CustomerOut), (status = 404, body = ErrorBody)))]
pub async fn get_customer(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CustomerId)>,
) -> Result<Json<CustomerOut>, AppError> {
    scope.require(Permission::CustomersRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Changes any subset; an empty `email` or `phone` clears it.
#[utoipa::path(patch, path = "/stores/{store_id}/customers/{customer_id}", tag = "customers",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("customer_id" = CustomerId, Path)),
    request_body = CustomerPatch,
    responses((status = 200, body = CustomerOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the e-mail is taken"), (status = 422, body = ErrorBody)))]
pub async fn update_customer(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CustomerId)>,
    Json(input): Json<CustomerPatch>,
) -> Result<Json<CustomerOut>, AppError> {
    scope.require(Permission::CustomersWrite)?;
    let f = Fields {
        name: input
            .name
            .as_deref()
            .map(|n| text("name", n, 1, 255))
            .transpose()?,
        email: input.email.as_deref().map(email).transpose()?,
        phone: input.phone.as_deref().map(phone).transpose()?,
        addresses: input.addresses.as_deref().map(addresses).transpose()?,
        accepts_marketing: input.accepts_marketing,
        tags: input.tags.as_deref().map(tags).transpose()?,
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            if !store::update(tx, store, id, &f, now)? {
                return Err(not_found());
            }
            let c = store::get(tx, store, id)?.ok_or_else(not_found)?;
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event: Event::CustomersUpdated,
                    data: &c,
                    action: "customer.updated",
                    resource_id: &id.to_string(),
                },
                now,
            )?;
            Ok(c)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a customer.
#[utoipa::path(delete, path = "/stores/{store_id}/customers/{customer_id}", tag = "customers",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("customer_id" = CustomerId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_customer(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CustomerId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::CustomersWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete(tx, store, id)? {
                return Err(not_found());
            }
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event: Event::CustomersDeleted,
                    data: &serde_json::json!({ "id": id }),
                    action: "customer.deleted",
                    resource_id: &id.to_string(),
                },
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
