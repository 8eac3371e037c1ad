//! The OpenAPI document is generated from the code and covers every routed path.

use std::collections::BTreeSet;

use crate::support::{post, spawn_app};

/// The paths axum actually routes, read from the router's own description of itself.
fn routed_paths() -> BTreeSet<String> {
    let (router, _) = merchant_admin::api();
    let debug = format!("{router:?}");
    let mut paths = BTreeSet::new();
    // The router lists `RouteId(n): "/path"` for each registered path.
    for part in debug.split("RouteId(").skip(1) {
        if let Some((_, rest)) = part.split_once("): \"")
            && let Some((path, _)) = rest.split_once('"')
            // axum adds catch-all routes of its own for nested routers' fallbacks.
            && !path.contains("__private__axum")
            && path != "/"
        {
            paths.insert(path.to_string());
        }
    }
    assert!(!paths.is_empty(), "could not read the routes from {debug}");
    paths
}

/// The paths a served document describes, as routed (`/v1` prefixed, root paths as they are).
fn documented_paths(doc: &serde_json::Value) -> BTreeSet<String> {
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(
        doc["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["url"] == "/v1"),
        "servers include /v1: {}",
        doc["servers"]
    );
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            // Root paths carry their own server; the rest are relative to /v1.
            let at_root = item["servers"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["url"] == "/"));
            if at_root {
                path.clone()
            } else {
                format!("/v1{path}")
            }
        })
        .collect()
}

/// Spec 9.1: two descriptions, admin and storefront. Every routed path is in exactly one:
/// the storefront's (`/v1/storefront-api/...`) in the storefront document, the rest in the
/// admin one.
#[tokio::test]
async fn every_routed_path_is_documented_and_every_documented_path_is_routed() {
    let app = spawn_app().await;
    let r = app.get("/v1/openapi/admin.json").await;
    r.expect(200);
    let admin = documented_paths(&r.body);
    let r = app.get("/v1/openapi/storefront.json").await;
    r.expect(200);
    assert_eq!(r.body["info"]["title"], "merchant-admin storefront API");
    let storefront = documented_paths(&r.body);
    assert!(
        storefront
            .iter()
            .all(|p| p.starts_with("/v1/storefront-api/")),
        "{storefront:?}"
    );
    assert!(
        !admin.iter().any(|p| p.starts_with("/v1/storefront-api/")),
        "{admin:?}"
    );
    assert!(storefront.contains("/v1/storefront-api/{key}/carts/{cart_id}/checkout"));

    let documented: BTreeSet<String> = admin.union(&storefront).cloned().collect();
    let routed = routed_paths();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty(),
        "routed but missing from the OpenAPI documents: {undocumented:?}"
    );
    assert!(
        unrouted.is_empty(),
        "documented but not routed: {unrouted:?}"
    );
    assert!(routed.contains("/v1/openapi/admin.json") && routed.contains("/healthz"));
    assert!(routed.contains("/v1/openapi/storefront.json"));
}

#[tokio::test]
async fn the_document_describes_the_error_shape() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["ErrorBody"]["properties"]["code"].is_object(),
        "{schemas}"
    );
    let codes = schemas["ErrorCode"]["enum"].as_array().unwrap();
    for code in [
        "validation_failed",
        "route_not_found",
        "rate_limited",
        "idempotency_key_reused",
    ] {
        assert!(codes.iter().any(|c| c == code), "{code} missing");
    }
}

#[tokio::test]
async fn public_operations_need_no_token_in_the_document() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await.body;
    // Spec 5 rule 9 (the plan list is not served yet).
    for (path, method) in [
        ("/auth/register", "post"),
        ("/auth/login", "post"),
        ("/auth/2fa/totp/verify", "post"),
        ("/auth/otp/send", "post"),
        ("/auth/otp/verify", "post"),
        ("/auth/refresh", "post"),
        ("/auth/logout", "post"),
        ("/docs/ask", "post"),
        ("/docs/{slug}", "get"),
        // The one-click unsubscribe link of marketing mail (RFC 8058).
        ("/unsubscribe/{token}", "get"),
        ("/unsubscribe/{token}", "post"),
    ] {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is documented");
        assert!(op["security"].is_null(), "{method} {path}: {op}");
    }
    assert!(doc["paths"]["/stores/{store_id}"]["get"]["security"].is_array());
    let ask = &doc["paths"]["/docs/ask"]["post"];
    assert_eq!(ask["tags"], serde_json::json!(["docs"]));
    assert!(
        ask["responses"]["200"]["content"]["text/event-stream"].is_object(),
        "{ask}"
    );
    assert!(
        ask["description"]
            .as_str()
            .is_some_and(|d| d.contains("visitor_id") && d.contains("daily")),
        "the limits are explained: {ask}"
    );
}

/// Both served documents.
async fn both_documents() -> Vec<(&'static str, serde_json::Value)> {
    let app = spawn_app().await;
    let mut docs = Vec::new();
    for name in ["admin", "storefront"] {
        let r = app.get(&format!("/v1/openapi/{name}.json")).await;
        r.expect(200);
        docs.push((name, r.body));
    }
    docs
}

/// Every operation of a document: `(path, method, operation)`.
fn operations(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in ["get", "put", "post", "delete", "patch"] {
            if item[m].is_object() {
                ops.push((path.clone(), m.to_owned(), item[m].clone()));
            }
        }
    }
    ops
}

/// The API reference shows each operation's error codes: every 4xx/5xx response names, in
/// backticks, at least one `code`, and every code named is one `ErrorCode` has.
#[tokio::test]
async fn every_error_response_names_its_codes() {
    for (name, doc) in both_documents().await {
        let known: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: ErrorCode is defined"))
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        for (path, method, op) in operations(&doc) {
            for (status, response) in op["responses"].as_object().unwrap() {
                if !(status.starts_with('4') || status.starts_with('5')) {
                    continue;
                }
                let description = response["description"].as_str().unwrap_or("");
                let named: Vec<&str> = description.split('`').skip(1).step_by(2).collect();
                let codes: Vec<&str> = named
                    .iter()
                    .copied()
                    .filter(|w| {
                        w.chars()
                            .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
                    })
                    .filter(|w| w.contains('_') || known.contains(*w))
                    .collect();
                assert!(
                    !codes.is_empty(),
                    "{name}: {method} {path} {status} names no code: {description:?}"
                );
                for code in codes {
                    assert!(
                        known.contains(code),
                        "{name}: {method} {path} {status} names `{code}`, which is no ErrorCode"
                    );
                }
            }
            // Every credentialed operation says what a missing or weak credential gets.
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                for status in ["401", "403", "429"] {
                    assert!(
                        op["responses"][status].is_object(),
                        "{name}: {method} {path} documents {status}"
                    );
                }
            }
        }
    }
}

/// Spec 8: every POST documents the optional `Idempotency-Key` header.
#[tokio::test]
async fn every_post_documents_the_idempotency_key() {
    for (name, doc) in both_documents().await {
        for (path, method, op) in operations(&doc) {
            if method != "post" {
                continue;
            }
            let key = op["parameters"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == "Idempotency-Key"));
            let key =
                key.unwrap_or_else(|| panic!("{name}: POST {path} documents Idempotency-Key"));
            assert_eq!(key["in"], "header");
            assert_eq!(key["schema"]["maxLength"], 255);
        }
    }
}

/// Every `$ref` in either document points at something the document defines.
#[tokio::test]
async fn every_reference_resolves() {
    fn refs<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(|r| r.as_str()) {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    for (name, doc) in both_documents().await {
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty());
        for r in found {
            let pointer = r
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("{name}: {r} is local"));
            assert!(doc.pointer(pointer).is_some(), "{name}: {r} is not defined");
        }
    }
    let docs = both_documents().await;
    let admin = &docs[0].1;
    for schema in ["HealthOut", "ReadyOut"] {
        assert!(
            admin["components"]["schemas"][schema].is_object(),
            "{schema}"
        );
    }
}

/// Sign-in answers are unions told apart by `status`: named variants and a discriminator,
/// the form client generators read.
#[tokio::test]
async fn unions_are_named_and_discriminated() {
    let docs = both_documents().await;
    let schemas = &docs[0].1["components"]["schemas"];
    for (union, variants) in [
        ("LoginOut", ["authenticated", "two_factor_required"]),
        ("AcceptOut", ["authenticated", "accepted"]),
    ] {
        let s = &schemas[union];
        assert_eq!(s["discriminator"]["propertyName"], "status", "{union}: {s}");
        for v in variants {
            let r = s["discriminator"]["mapping"][v]
                .as_str()
                .unwrap_or_else(|| panic!("{union} maps {v}"));
            let target = r.rsplit('/').next().unwrap();
            assert!(schemas[target].is_object(), "{r}");
        }
        for v in s["oneOf"].as_array().unwrap() {
            assert!(
                v["$ref"].is_string(),
                "{union}: every variant is named: {v}"
            );
        }
    }
    // No inline union is left for generators to choke on.
    for (name, s) in schemas.as_object().unwrap() {
        if let Some(variants) = s["oneOf"].as_array() {
            let inline_tagged = variants.iter().any(|v| v["allOf"].is_array());
            assert!(
                !inline_tagged || s["discriminator"].is_object(),
                "{name}: {s}"
            );
        }
    }
}

/// Each create links to the operations on what it created, so a client (or a stateful
/// fuzzer) can follow the id it was handed.
#[tokio::test]
async fn creates_link_to_what_they_created() {
    let docs = both_documents().await;
    let doc = &docs[0].1;
    let links =
        &doc["paths"]["/stores/{store_id}/purchase-orders"]["post"]["responses"]["201"]["links"];
    let links = links.as_object().unwrap_or_else(|| panic!("{links}"));
    let ids: BTreeSet<String> = operations(doc)
        .into_iter()
        .filter_map(|(_, _, op)| op["operationId"].as_str().map(str::to_owned))
        .collect();
    assert!(links.len() >= 2, "{links:?}");
    for link in links.values() {
        assert!(
            ids.contains(link["operationId"].as_str().unwrap()),
            "{link}"
        );
        assert_eq!(link["parameters"]["store_id"], "$request.path.store_id");
        let to_id = link["parameters"]
            .as_object()
            .unwrap()
            .values()
            .any(|v| v == "$response.body#/id");
        assert!(to_id, "{link}");
    }

    // A storefront cart is answered only with the token it was created with: the links
    // from its create carry that too, as the header the calls about it read.
    let doc = &docs[1].1;
    let links = &doc["paths"]["/storefront-api/{key}/carts"]["post"]["responses"]["201"]["links"];
    let links = links.as_object().unwrap_or_else(|| panic!("{links}"));
    let reads_token: BTreeSet<String> = operations(doc)
        .into_iter()
        .filter(|(_, _, op)| {
            op["parameters"].as_array().is_some_and(|ps| {
                ps.iter()
                    .any(|p| p["in"] == "header" && p["name"] == "X-Cart-Token")
            })
        })
        .filter_map(|(_, _, op)| op["operationId"].as_str().map(str::to_owned))
        .collect();
    let mut carried = 0;
    for link in links.values() {
        assert_eq!(link["parameters"]["key"], "$request.path.key", "{link}");
        assert_eq!(
            link["parameters"]["cart_id"], "$response.body#/id",
            "{link}"
        );
        if reads_token.contains(link["operationId"].as_str().unwrap()) {
            assert_eq!(
                link["parameters"]["header.X-Cart-Token"], "$response.body#/token",
                "{link}"
            );
            carried += 1;
        }
    }
    assert!(carried >= 3, "{links:?}");
}

/// Schemas say what the wire carries and what the handlers enforce: enum values are the
/// snake_case texts sent, and input strings carry the handlers' length limits.
#[tokio::test]
async fn schemas_carry_wire_values_and_input_limits() {
    let docs = both_documents().await;
    let schemas = &docs[0].1["components"]["schemas"];
    assert_eq!(
        schemas["PageStatus"]["enum"],
        serde_json::json!(["draft", "published"])
    );
    assert!(
        schemas["ChannelKind"]["enum"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("storefront_chat")),
        "{}",
        schemas["ChannelKind"]
    );
    let title = &schemas["ProductIn"]["properties"]["title"];
    assert_eq!(title["minLength"], 1, "{title}");
    assert_eq!(title["maxLength"], 255, "{title}");
    let rating = &schemas["ReviewIn"]["properties"]["rating"];
    assert_eq!(
        (rating["minimum"].as_f64(), rating["maximum"].as_f64()),
        (Some(1.0), Some(5.0)),
        "{rating}"
    );
    // Billing's subscription and a webhook's subscription are two schemas, not one.
    assert!(schemas["SubscriptionOut"]["properties"]["plan_code"].is_object());
    assert!(schemas["WebhookSubscriptionOut"]["properties"]["webhook_id"].is_object());
    // The assistant's message roles and the store roles, likewise.
    let roles = |name: &str| {
        schemas[name]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        roles("Role").contains(&serde_json::json!("owner")),
        "{}",
        schemas["Role"]
    );
    assert!(
        roles("MessageRole").contains(&serde_json::json!("user")),
        "{}",
        schemas["MessageRole"]
    );
    let limit = doc_param(&docs[0].1, "/stores/{store_id}/orders", "limit");
    assert_eq!(
        (
            limit["schema"]["minimum"].as_u64(),
            limit["schema"]["maximum"].as_u64()
        ),
        (Some(1), Some(200)),
        "{limit}"
    );
}

/// A GET operation's parameter by name.
fn doc_param(doc: &serde_json::Value, path: &str, name: &str) -> serde_json::Value {
    doc["paths"][path]["get"]["parameters"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("GET {path} has {name}"))
}

/// Issue 21: the reference shows a body to copy for every operation. Every JSON request body
/// and response carries an example; an error's example carries a code its response names.
/// (`.ci/openapi-check` validates each example against its schema.)
#[tokio::test]
async fn every_json_body_has_an_example() {
    for (name, doc) in both_documents().await {
        let mut missing = Vec::new();
        for (path, method, op) in operations(&doc) {
            let mut media = vec![(
                "request".to_owned(),
                op["requestBody"]["content"]["application/json"].clone(),
                String::new(),
            )];
            for (status, r) in op["responses"].as_object().unwrap() {
                media.push((
                    status.clone(),
                    r["content"]["application/json"].clone(),
                    r["description"].as_str().unwrap_or("").to_owned(),
                ));
            }
            for (status, m, description) in media {
                if m.is_null() {
                    continue;
                }
                let example = &m["example"];
                if example.is_null() {
                    missing.push(format!("{method} {path} {status}"));
                } else if let Some(code) = example["code"]
                    .as_str()
                    .filter(|_| status.starts_with('4') || status.starts_with('5'))
                {
                    assert!(
                        description.contains(&format!("`{code}`")),
                        "{name}: {method} {path} {status}: {code} is not in {description:?}"
                    );
                }
            }
        }
        assert!(missing.is_empty(), "{name}: no example for {missing:#?}");
    }
    // One known operation, as an integrator reads it.
    let docs = both_documents().await;
    let refund = &docs[0].1["paths"]["/stores/{store_id}/orders/{order_id}/refund"]["post"];
    let body = &refund["requestBody"]["content"]["application/json"]["example"];
    assert!(body["amount_cents"].as_i64().unwrap() > 0, "{body}");
    assert_eq!(
        refund["responses"]["502"]["content"]["application/json"]["example"]["code"],
        "payment_provider_failed"
    );
}

/// Viewers list operations by summary, as plain text: every operation has one, a single
/// line without code marks (the whole paragraph, marks and all, is in its description).
#[tokio::test]
async fn every_operation_has_a_plain_one_line_summary() {
    for (name, doc) in both_documents().await {
        for (path, method, op) in operations(&doc) {
            let summary = op["summary"].as_str().unwrap_or("");
            assert!(
                !summary.is_empty() && !summary.contains('`') && !summary.contains('\n'),
                "{name}: {method} {path}: {summary:?}"
            );
        }
    }
}

/// The schema at a JSON pointer of a document's components, references followed.
fn component<'a>(doc: &'a serde_json::Value, pointer: &str) -> &'a serde_json::Value {
    let mut v = doc["components"]["schemas"]
        .pointer(pointer)
        .unwrap_or_else(|| panic!("components/schemas{pointer}"));
    while let Some(r) = v["$ref"].as_str() {
        v = doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{r} resolves"));
    }
    v
}

/// Issue 21: input schemas carry the limits the handlers enforce, from the same constants
/// and tables, so a body the document allows is one the API can take: event names and
/// scopes are the catalog's, counts and bounds the handlers' own.
#[tokio::test]
async fn input_schemas_carry_what_the_handlers_check() {
    use merchant_admin::events::Event;
    use merchant_admin::http::permissions::Permission;
    let docs = both_documents().await;
    let doc = &docs[0].1;

    // A store webhook subscribes to the catalog's events, less the platform's.
    let events = component(doc, "/WebhookIn/properties/events/items");
    let store_events: Vec<&str> = Event::ALL
        .iter()
        .filter(|e| !e.is_platform())
        .map(|e| e.as_str())
        .collect();
    assert_eq!(events["enum"], serde_json::json!(store_events), "{events}");
    assert!(!store_events.contains(&Event::UserCreated.as_str()));
    let scopes = component(doc, "/TokenIn/properties/scopes");
    assert_eq!(scopes["minItems"], 1, "{scopes}");
    let codes = component(doc, "/TokenIn/properties/scopes/items")["enum"].clone();
    let mut want = vec!["*"];
    want.extend(Permission::ALL.iter().map(|p| p.code()));
    assert_eq!(codes, serde_json::json!(want));

    // Tags as check_tags and customers::model::tag take them, and a channel's new name as
    // its create's.
    for (schema, pattern) in [
        ("/ProductIn/properties/tags", None),
        ("/ProductPatch/properties/tags", None),
        ("/CustomerIn/properties/tags", Some("u0000")),
        ("/CustomerPatch/properties/tags", Some("u0000")),
    ] {
        let tags = component(doc, schema);
        assert_eq!(tags["maxItems"], 50, "{schema}: {tags}");
        assert!(tags["description"].is_string(), "{schema}: {tags}");
        let tag = &tags["items"];
        assert_eq!(
            (tag["minLength"].as_u64(), tag["maxLength"].as_u64()),
            (Some(1), Some(64)),
            "{schema}: {tag}"
        );
        let p = tag["pattern"].as_str().unwrap_or_default();
        assert!(p.contains("\\S") || p.contains("\\s"), "{schema}: {tag}");
        if let Some(control) = pattern {
            assert!(
                p.contains(control),
                "{schema} refuses control characters: {tag}"
            );
        }
    }
    // A change's settings are one kind's: a body mixing two kinds' keys is not valid.
    let settings = component(doc, "/ChannelPatch/properties/settings");
    let kinds: Vec<Vec<&str>> = settings["anyOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{settings}"))
        .iter()
        .filter(|k| k["type"] == "object")
        .map(|k| {
            assert_eq!(k["additionalProperties"], false, "{k}");
            k["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            vec!["app_secret", "phone_number_id", "verify_token"],
            vec!["address", "inbound_secret"]
        ],
        "{settings}"
    );
    let name = component(doc, "/ChannelPatch/properties/name");
    assert_eq!(
        (name["minLength"].as_u64(), name["maxLength"].as_u64()),
        (Some(1), Some(120)),
        "{name}"
    );

    // A campaign's subject is one line and its body 1 to 100,000 characters with something
    // not a space; a webhook's subscription names at least one event.
    for schema in ["/CampaignIn", "/CampaignPatch"] {
        let subject = component(doc, &format!("{schema}/properties/subject"));
        let p = subject["pattern"].as_str().unwrap_or_default();
        assert!(
            p.contains("\\r\\n") && p.contains("\\S"),
            "{schema}: {subject}"
        );
        let body = component(doc, &format!("{schema}/properties/body_markdown"));
        assert_eq!(
            (body["minLength"].as_u64(), body["maxLength"].as_u64()),
            (
                Some(1),
                Some(merchant_admin::marketing::writes::MAX_BODY as u64)
            ),
            "{schema}: {body}"
        );
        assert_eq!(body["pattern"], "\\S", "{schema}: {body}");
    }
    for schema in [
        "/EventsIn/properties/events",
        "/RootEventsIn/properties/events",
    ] {
        assert_eq!(component(doc, schema)["minItems"], 1, "{schema}");
    }

    // An invite is accepted with a password as every account's; an inbound mail's files
    // are at most 20, each a MIME type and standard base64 (the pattern takes no
    // non-canonical last symbol, which the decoder refuses).
    let password = component(doc, "/AcceptIn/properties/password");
    assert_eq!(
        (
            password["minLength"].as_u64(),
            password["maxLength"].as_u64()
        ),
        (Some(8), Some(256)),
        "{password}"
    );
    let files = component(doc, "/InboundEmail/properties/attachments");
    assert_eq!(files["maxItems"], 20, "{files}");
    for field in ["content_type", "content"] {
        let f = component(doc, &format!("/InboundAttachment/properties/{field}"));
        assert!(f["pattern"].is_string(), "{field}: {f}");
    }

    // Counts and bounds.
    let po_items = component(doc, "/PurchaseOrderIn/properties/items");
    assert_eq!(
        po_items["maxItems"].as_u64(),
        Some(merchant_admin::purchasing::writes::MAX_ITEMS as u64),
        "{po_items}"
    );
    let line = component(doc, "/CartLineIn/properties/quantity");
    assert_eq!(
        line["maximum"].as_i64(),
        Some(merchant_admin::carts::writes::MAX_QUANTITY),
        "{line}"
    );
    let cart = component(doc, "/CartLinesIn/properties/items");
    assert_eq!(
        cart["maxItems"].as_u64(),
        Some(merchant_admin::carts::writes::MAX_LINES as u64),
        "{cart}"
    );
    let quantity = component(doc, "/OrderItemIn/properties/quantity");
    assert_eq!(
        (quantity["minimum"].as_i64(), quantity["maximum"].as_i64()),
        (Some(1), Some(10_000)),
        "{quantity}"
    );
    let phone = component(doc, "/PhoneIn/properties/phone_e164");
    assert_eq!(phone["pattern"], r"^\+[1-9][0-9]{7,14}$", "{phone}");
    let password = component(doc, "/RegisterIn/properties/password");
    assert_eq!(password["minLength"], 8, "{password}");
    let text = component(doc, "/MessageIn/properties/text");
    assert_eq!(
        text["maxLength"].as_u64(),
        Some(merchant_admin::inbox::conversations::MAX_MESSAGE_CHARS as u64),
        "{text}"
    );

    // The brand system's values: its enums and array bounds are the checks' own tables.
    let system = merchant_admin::brand::system::BUTTON_SHAPES;
    let shape = component(doc, "/Email/properties/button_shape");
    assert_eq!(shape["enum"], serde_json::json!(system), "{shape}");
    let transform = component(doc, "/Typography/properties/heading_transform");
    assert_eq!(
        transform["enum"],
        serde_json::json!(merchant_admin::brand::system::HEADING_TRANSFORMS),
        "{transform}"
    );
    let dos = component(doc, "/Voice/properties/do");
    assert_eq!(
        dos["maxItems"].as_u64(),
        Some(merchant_admin::brand::system::MAX_ITEMS as u64),
        "{dos}"
    );
    let weight = component(doc, "/Typography/properties/heading_weight");
    assert_eq!(weight["multipleOf"].as_f64(), Some(100.0), "{weight}");

    // A file is bytes, not an array of numbers, of whatever type it was sent with.
    let file = &doc["paths"]["/stores/{store_id}/conversations/{conversation_id}/messages/{message_id}/attachments/{index}"]
        ["get"]["responses"]["200"]["content"]["*/*"]["schema"];
    assert_eq!(
        (file["type"].as_str(), file["format"].as_str()),
        (Some("string"), Some("binary")),
        "{file}"
    );
}

/// Links beyond create-to-child: each step of a flow hands the next what it needs (a
/// registered account signs in; a session renews; a delivery is retried; a cart is checked
/// out with its token), so a client or a stateful fuzzer can walk the flow.
#[tokio::test]
async fn flows_link_each_step_to_the_next() {
    let docs = both_documents().await;
    let link = |path: &str, method: &str, status: &str, to: &str| -> serde_json::Value {
        let links = &doc_of(&docs, path)["paths"][path][method]["responses"][status]["links"];
        links
            .as_object()
            .and_then(|l| l.values().find(|l| l["operationId"] == to))
            .cloned()
            .unwrap_or_else(|| panic!("{method} {path} {status} links to {to}: {links}"))
    };
    let login = link("/auth/register", "post", "201", "login");
    assert_eq!(login["requestBody"]["email"], "$request.body#/email");
    assert_eq!(login["requestBody"]["password"], "$request.body#/password");
    let refresh = link("/auth/login", "post", "200", "refresh");
    assert_eq!(
        refresh["requestBody"]["refresh_token"],
        "$response.body#/refresh_token"
    );
    let accept = link("/stores/{store_id}/invites", "post", "201", "accept_invite");
    assert_eq!(accept["parameters"]["token"], "$response.body#/token");
    let retry = link(
        "/stores/{store_id}/webhooks/{webhook_id}/deliveries",
        "get",
        "200",
        "retry_delivery",
    );
    assert_eq!(
        retry["parameters"]["delivery_id"],
        "$response.body#/data/0/id"
    );
    assert_eq!(
        retry["parameters"]["webhook_id"],
        "$request.path.webhook_id"
    );
    let order = link(
        "/stores/{store_id}/suppliers",
        "post",
        "201",
        "create_purchase_order",
    );
    assert_eq!(order["requestBody"]["supplier_id"], "$response.body#/id");
    // A body template: a placed purchase order receives a unit of its first line.
    let receive = link(
        "/stores/{store_id}/purchase-orders/{purchase_order_id}/order",
        "post",
        "200",
        "receive_purchase_order",
    );
    assert_eq!(
        receive["requestBody"]["items"][0]["variant_id"],
        "$response.body#/items/0/variant_id"
    );
    let checkout = link(
        "/storefront-api/{key}/carts/{cart_id}/customer",
        "put",
        "200",
        "checkout",
    );
    assert_eq!(
        checkout["parameters"]["header.X-Cart-Token"],
        "$request.header.X-Cart-Token"
    );
    // The inbox and the assistant both have a `get_conversation`: the assistant's list links
    // to its own by reference, and a conversation's pending proposal to its approval.
    let admin = doc_of(&docs, "/stores/{store_id}/assistant/conversations");
    let links = &admin["paths"]["/stores/{store_id}/assistant/conversations"]["get"]["responses"]["200"]
        ["links"];
    let own = "#/paths/~1stores~1{store_id}~1assistant~1conversations~1{conversation_id}/get";
    assert!(
        links
            .as_object()
            .is_some_and(|l| l.values().any(|l| l["operationRef"] == own)),
        "{links}"
    );
    let approve = link(
        "/stores/{store_id}/assistant/conversations/{conversation_id}",
        "get",
        "200",
        "approve",
    );
    assert_eq!(
        approve["parameters"]["proposal_id"],
        "$response.body#/pending_proposals/0/id"
    );
    // Every link names an operation of its own document, and every parameter it sets is one
    // the target has.
    for (_, doc) in &docs {
        let ops = operations(doc);
        for (path, method, op) in &ops {
            for (status, response) in op["responses"].as_object().unwrap() {
                let Some(links) = response["links"].as_object() else {
                    continue;
                };
                for (name, l) in links {
                    // By id, or (where two operations share one) by reference.
                    let target = match l["operationRef"].as_str() {
                        Some(r) => doc.pointer(r.trim_start_matches('#')),
                        None => ops
                            .iter()
                            .find(|(_, _, o)| o["operationId"] == l["operationId"])
                            .map(|(_, _, o)| o),
                    };
                    let target =
                        target.unwrap_or_else(|| panic!("{method} {path} {status} {name}: {l}"));
                    let to = &l["operationId"];
                    // What it reads from the request is a parameter the source has.
                    let reads = l["parameters"].as_object().into_iter().flatten();
                    for (_, v) in reads {
                        let v = v.as_str().unwrap_or_default();
                        let read = [("$request.path.", "path"), ("$request.header.", "header")]
                            .into_iter()
                            .find_map(|(prefix, at)| Some((v.strip_prefix(prefix)?, at)));
                        if let Some((p, at)) = read {
                            let has = op["parameters"].as_array().is_some_and(|ps| {
                                ps.iter().any(|x| x["name"] == p && x["in"] == at)
                            });
                            assert!(has, "{method} {path} {status} {name}: reads {v}");
                        }
                    }
                    for p in l["parameters"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k)
                    {
                        let (at, p) = p.split_once('.').unwrap_or(("", p));
                        let has = target["parameters"].as_array().is_some_and(|ps| {
                            ps.iter()
                                .any(|x| x["name"] == p && (at.is_empty() || x["in"] == at))
                        });
                        assert!(has, "{method} {path} {status} {name}: {to} has no {p}");
                    }
                }
            }
        }
    }
}

/// The document (of `docs`) that has `path`.
fn doc_of<'a>(docs: &'a [(&str, serde_json::Value)], path: &str) -> &'a serde_json::Value {
    docs.iter()
        .map(|(_, d)| d)
        .find(|d| d["paths"][path].is_object())
        .unwrap_or_else(|| panic!("a document has {path}"))
}

/// utoipa names a component after its type, whatever its module: two types of one name
/// would be one component, the last registered, so one operation documents the other's body
/// (the assistant's rename once took the inbox's conversation PATCH). Every type that
/// derives `ToSchema` (or is a `text_enum!`) has a component name of its own.
#[test]
fn no_two_schemas_share_a_component_name() {
    let mut files = Vec::new();
    crate::layers::rust_files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let mut clashes = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let schema = (line.contains("derive(") && line.contains("ToSchema"))
                || line.trim_start().starts_with("text_enum!");
            if !schema || line.trim_start().starts_with("//") {
                continue;
            }
            // The type the derive (or the macro) is on, and an `as = Name` before it.
            let mut renamed = None;
            for next in &lines[i + 1..] {
                let t = next.trim_start();
                if let Some(rest) = t.split("schema(as = ").nth(1) {
                    renamed = rest.split(')').next().map(str::to_owned);
                }
                let decl = t
                    .strip_prefix("pub ")
                    .or_else(|| t.strip_prefix("pub(crate) "))
                    .unwrap_or(t);
                let name = decl
                    .strip_prefix("struct ")
                    .or_else(|| decl.strip_prefix("enum "))
                    .and_then(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next());
                if let Some(name) = name {
                    let name = renamed.take().unwrap_or_else(|| name.to_owned());
                    let at = format!("{}:{}", file.display(), i + 1);
                    if let Some(before) = seen.insert(name.clone(), at.clone()) {
                        clashes.push(format!("{name}: {before} and {at}"));
                    }
                    break;
                }
            }
        }
    }
    assert!(seen.len() > 100, "read {} schema types", seen.len());
    assert!(clashes.is_empty(), "{clashes:#?}");
}

/// Issue 21: a workflow's definition is described as the validator checks it, so a
/// generated one can pass: one node schema per type with that type's config, the trigger's
/// shapes with the events a trigger may name, a condition's `value` by its `op`, and the
/// graph's bounds; its example is a definition the API takes.
#[tokio::test]
async fn workflow_definitions_are_described_as_the_validator_checks_them() {
    use merchant_admin::events::Event;
    use merchant_admin::workflows::{model, validate};
    let app = spawn_app().await;
    let docs = both_documents().await;
    let doc = &docs[0].1;

    let node = component(doc, "/Node");
    let types: Vec<&str> = node["discriminator"]["mapping"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = model::NODE_TYPES.to_vec();
    want.sort_unstable();
    assert_eq!(types, want, "{node}");
    let wait = component(doc, "/NodeWait");
    assert_eq!(
        wait["properties"]["config"]["$ref"], "#/components/schemas/WaitConfig",
        "{wait}"
    );
    assert!(
        wait["required"]
            .as_array()
            .unwrap()
            .contains(&"config".into()),
        "{wait}"
    );
    let seconds = component(doc, "/WaitConfig/oneOf/0/properties/seconds");
    assert_eq!(
        seconds["maximum"].as_i64(),
        Some(validate::MAX_WAIT_SECONDS)
    );
    let graph = component(doc, "/Graph");
    assert_eq!(
        graph["properties"]["nodes"]["maxItems"].as_u64(),
        Some(validate::MAX_NODES as u64)
    );
    assert_eq!(
        graph["properties"]["edges"]["maxItems"].as_u64(),
        Some(validate::MAX_EDGES as u64)
    );
    // Every op is in exactly one of the condition's variants.
    let mut ops: Vec<String> = component(doc, "/Predicate")["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            component(
                doc,
                &format!(
                    "/{}",
                    v["$ref"].as_str().unwrap().rsplit('/').next().unwrap()
                ),
            )
        })
        .flat_map(|v| v["properties"]["op"]["enum"].as_array().unwrap().clone())
        .map(|o| o.as_str().unwrap().to_owned())
        .collect();
    ops.sort();
    let mut all: Vec<&str> = model::Op::ALL.iter().map(|o| o.as_str()).collect();
    all.sort_unstable();
    assert_eq!(ops, all);
    let events = component(doc, "/TriggerEventName")["enum"].clone();
    let store_events: Vec<&str> = Event::ALL
        .iter()
        .map(|e| e.as_str())
        .filter(|n| validate::store_event(n).is_some())
        .collect();
    assert_eq!(events, serde_json::json!(store_events));
    assert!(!store_events.contains(&Event::WorkflowStep.as_str()));
    let input = component(doc, "/WorkflowIn/properties/trigger");
    assert!(
        input.to_string().contains("#/components/schemas/Trigger"),
        "{input}"
    );

    // The create's example is a definition the API takes; a run started by hand is read
    // back through its link.
    let create = &doc["paths"]["/stores/{store_id}/workflows"]["post"];
    let example = create["requestBody"]["content"]["application/json"]["example"].clone();
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let path = format!("/v1/stores/{store}/workflows");
    let created = app.call(post(), &path, &token, Some(example)).await;
    created.expect(201);
    let id = created.body["id"].as_str().unwrap();
    app.call(post(), &format!("{path}/{id}/publish"), &token, None)
        .await
        .expect(200);
    let links = &doc["paths"]["/stores/{store_id}/workflows/{workflow_id}/run"]["post"]["responses"]
        ["201"]["links"];
    assert!(
        links.as_object().unwrap().values().any(|l| {
            l["operationId"] == "get_run" && l["parameters"]["run_id"] == "$response.body#/id"
        }),
        "{links}"
    );
    // A JSON `null` is no body, as an optional body's schema (`null` or the object) says.
    let run = app
        .call(
            post(),
            &format!("{path}/{id}/run"),
            &token,
            Some(serde_json::Value::Null),
        )
        .await;
    run.expect(201);
    assert!(run.body["subject"].is_null(), "{}", run.text);
}

/// Issue 21: a body the document allows is one the operation takes. A product PATCH keeps a
/// variant by `id` without `on_hand` (stock moves through adjustments) or adds one without
/// `id`; only a manual order's lines set `unit_price_cents`.
#[tokio::test]
async fn each_operation_describes_the_lines_it_takes() {
    let docs = both_documents().await;
    let doc = &docs[0].1;
    let props = |name: &str| -> Vec<String> {
        let mut p: Vec<String> = component(doc, &format!("/{name}"))["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        p.sort();
        p
    };
    let new = props("NewVariantIn");
    assert!(
        new.contains(&"on_hand".into()) && !new.contains(&"id".into()),
        "{new:?}"
    );
    let change = props("VariantChangeIn");
    assert!(
        change.contains(&"id".into()) && !change.contains(&"on_hand".into()),
        "{change:?}"
    );
    assert!(
        component(doc, "/VariantChangeIn")["required"]
            .as_array()
            .unwrap()
            .contains(&"id".into())
    );
    let patch = component(doc, "/ProductPatch/properties/variants/items");
    assert_eq!(
        component(doc, "/VariantPatchIn")["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{patch}"
    );
    let create = component(doc, "/ProductIn/properties/variants/items");
    assert_eq!(
        create["description"],
        component(doc, "/NewVariantIn")["description"]
    );

    let body = |path: &str| {
        doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        body("/stores/{store_id}/orders"),
        "#/components/schemas/OrderIn"
    );
    assert_eq!(
        body("/stores/{store_id}/orders/manual"),
        "#/components/schemas/ManualOrderIn"
    );
    assert!(!props("OrderItemIn").contains(&"unit_price_cents".into()));
    assert!(props("ManualOrderItemIn").contains(&"unit_price_cents".into()));
    // Otherwise the two are the same body.
    let mut plain = props("OrderItemIn");
    plain.push("unit_price_cents".into());
    plain.sort();
    assert_eq!(plain, props("ManualOrderItemIn"));
    assert_eq!(props("OrderIn"), props("ManualOrderIn"));

    // What the schemas say is what the API does.
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let products = format!("/v1/stores/{store}/products");
    let made = app
        .call(
            post(),
            &products,
            &token,
            Some(serde_json::json!({"title": "Mug", "variants": [
                {"sku": "MUG-1", "price_cents": 1000, "on_hand": 3}]})),
        )
        .await;
    made.expect(201);
    let variant = made.body["variants"][0]["id"].clone();
    let product = format!("{products}/{}", made.body["id"].as_str().unwrap());
    let kept = serde_json::json!({"variants": [
        {"id": variant, "sku": "MUG-1", "price_cents": 1200, "on_hand": 5}]});
    app.call(crate::support::patch(), &product, &token, Some(kept))
        .await
        .expect_error(422, "validation_failed");
    let kept = serde_json::json!({"variants": [
        {"id": variant, "sku": "MUG-1", "price_cents": 1200},
        {"sku": "MUG-2", "price_cents": 1300, "on_hand": 2}]});
    app.call(crate::support::patch(), &product, &token, Some(kept))
        .await
        .expect(200);
}

/// Issue 21: a query filter that takes a fixed set of values declares them (a value
/// outside them is 422): the product list's `status` and `sort`, the summary's `interval`,
/// the inbox's `assignee`; and so do bodies: notification kinds, a read's ids or all, a
/// brand color.
#[tokio::test]
async fn query_filters_declare_the_values_they_take() {
    let docs = both_documents().await;
    let doc = &docs[0].1;
    let schema = |path: &str, name: &str| doc_param(doc, path, name)["schema"].clone();
    assert_eq!(
        schema("/stores/{store_id}/products", "status")["enum"],
        serde_json::json!(["draft", "active", "archived"])
    );
    let sorts = schema("/stores/{store_id}/products", "sort")["enum"].clone();
    for column in merchant_admin::catalog::store::SORT_COLUMNS {
        assert!(
            sorts.as_array().unwrap().contains(&column.into()),
            "{sorts}"
        );
        assert!(
            sorts
                .as_array()
                .unwrap()
                .contains(&format!("-{column}").into())
        );
    }
    assert_eq!(
        schema("/stores/{store_id}/analytics/summary", "interval")["enum"],
        serde_json::json!(["day", "week", "month"])
    );
    assert_eq!(
        schema("/stores/{store_id}/analytics/summary", "from")["format"],
        "date"
    );
    // ... of a year the range takes, 1970 to 9998 (`analytics::range`).
    for (path, name) in [
        ("/stores/{store_id}/analytics/summary", "from"),
        ("/stores/{store_id}/analytics/summary", "to"),
        ("/stores/{store_id}/analytics/top-products", "from"),
        ("/stores/{store_id}/analytics/top-products", "to"),
    ] {
        let p = schema(path, name)["pattern"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(p.starts_with("^(19[7-9][0-9]|"), "{path} {name}: {p}");
    }
    // Bodies, likewise: a preference names a notification kind; a read names ids or all.
    let kinds = component(doc, "/PreferencesIn/properties/kinds/propertyNames");
    let names: Vec<&str> = merchant_admin::notifications::model::Kind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(kinds["enum"], serde_json::json!(names), "{kinds}");
    let read = component(doc, "/ReadIn");
    assert_eq!(read["oneOf"].as_array().map(Vec::len), Some(2), "{read}");
    let color = component(doc, "/ColorAliases/properties/action_primary");
    assert_eq!(color["pattern"], "^#[0-9A-Fa-f]{6}$", "{color}");
    let slug = &doc["paths"]["/docs/{slug}"]["get"]["parameters"][0]["schema"];
    assert_eq!(
        slug["enum"],
        serde_json::json!(merchant_admin::docs::pages::SLUGS),
        "{slug}"
    );
    let assignee = schema("/stores/{store_id}/conversations", "assignee");
    assert_eq!(
        assignee["oneOf"][0]["enum"],
        serde_json::json!(["me", "none"]),
        "{assignee}"
    );
}
