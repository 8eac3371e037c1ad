//! The event catalog: every event the service emits, under both of its paths.

use crate::http::auth::Principal;
use crate::http::extract::Json;
use crate::http::page::Page;
use crate::webhooks::event_types;
use crate::webhooks::model::CatalogEntry;

/// Every event name the service can emit, with what fires it.
#[utoipa::path(get, path = "/webhook-events/catalog", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = Page<CatalogEntry>)))]
pub async fn catalog(_: Principal) -> Json<Page<CatalogEntry>> {
    Json(Page::whole(
        event_types::EVENTS
            .iter()
            .map(|e| CatalogEntry {
                event: e.as_str(),
                description: e.description(),
            })
            .collect(),
    ))
}

/// The same catalog under the webhooks path.
#[utoipa::path(get, path = "/webhooks/events/catalog", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = Page<CatalogEntry>)))]
pub async fn catalog_alias(p: Principal) -> Json<Page<CatalogEntry>> {
    catalog(p).await
}
