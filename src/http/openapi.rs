//! The OpenAPI 3.1 document of the admin API, generated from the handlers' annotations
//! (utoipa) and served at `GET /v1/openapi/admin.json`. Paths are relative to the `/v1`
//! server entry; operational root paths carry their own `servers` override.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
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

/// A response body of raw bytes (a file): `type: string, format: binary`, what OpenAPI
/// tools read as a file. (`Vec<u8>` would be described as an array of integers, which a
/// client would try, and fail, to parse.)
pub struct Binary;

impl utoipa::PartialSchema for Binary {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl utoipa::ToSchema for Binary {}

/// Gives every path of `root` a `servers: [{url: "/"}]` override and adds it to `doc`.
pub fn merge_root_paths(doc: &mut utoipa::openapi::OpenApi, root: utoipa::openapi::OpenApi) {
    for (path, mut item) in root.paths.paths {
        item.servers = Some(vec![Server::new("/")]);
        doc.paths.paths.insert(path, item);
    }
    // Their schemas (`HealthOut`, `ReadyOut`) come with them.
    if let Some(root) = root.components {
        let components = doc.components.get_or_insert_with(Default::default);
        components.schemas.extend(root.schemas);
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
            // Viewers show a summary as plain text: code marks stay in the description.
            let plain = first.replace('`', "");
            if first.len() < paragraph.len() || plain.len() < first.len() {
                op.description = Some(match op.description.take() {
                    Some(rest) => format!("{paragraph}\n\n{rest}"),
                    None => paragraph.clone(),
                });
            }
            op.summary = Some(plain);
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

/// Everything the annotations cannot say once per operation, added to a serialized document
/// (spec 1-3, 8): error responses every authenticated operation can answer, the codes each
/// error response can carry, the `Idempotency-Key` header of every POST, links from creates
/// to what they created, named, discriminated unions, and an example of every JSON body.
pub fn finish(doc: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document serializes");
    let codes = error_codes();
    // The error responses added below refer to these, in both documents.
    for (name, schema) in [
        (
            "ErrorBody",
            <crate::error::ErrorBody as utoipa::PartialSchema>::schema(),
        ),
        ("ErrorCode", <ErrorCode as utoipa::PartialSchema>::schema()),
    ] {
        let schemas = &mut doc["components"]["schemas"];
        if schemas.get(name).is_none() {
            schemas[name] = serde_json::to_value(schema).expect("a schema serializes");
        }
    }
    let ops: Vec<(String, String)> = operations(&doc);
    for (path, method) in &ops {
        let op = &mut doc["paths"][path.as_str()][method.as_str()];
        add_common_errors(op, method);
        if method == "post" {
            add_idempotency_key(op);
        }
        name_error_codes(op, method, &codes);
    }
    name_unions(&mut doc);
    drop_object_defaults(&mut doc);
    add_links(&mut doc, &ops);
    add_flow_links(&mut doc);
    super::openapi_examples::add(&mut doc);
    doc
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `(path, method)` of every operation, in document order.
fn operations(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for m in METHODS {
                if item[m].is_object() {
                    ops.push((path.clone(), m.to_owned()));
                }
            }
        }
    }
    ops
}

/// Every `ErrorCode`'s wire name.
pub fn error_codes() -> BTreeSet<String> {
    let schema = serde_json::to_value(<ErrorCode as utoipa::PartialSchema>::schema())
        .expect("the ErrorCode schema serializes");
    schema["enum"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

/// The error responses an operation can answer whatever it does: 401 (no or a bad
/// credential) and 403 (a credential without the permission) where it needs one; 400 (a
/// malformed body, a bad `Idempotency-Key`, a bad `limit` or `cursor`) and 422 (a field or
/// parameter out of bounds, a reused `Idempotency-Key`) where it takes input; 404 where
/// a path names something; 429 (over budget) everywhere.
fn add_common_errors(op: &mut Value, method: &str) {
    let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
    let params = op["parameters"].as_array().cloned().unwrap_or_default();
    let in_path = params.iter().any(|p| p["in"] == "path");
    let in_query = params.iter().any(|p| p["in"] == "query");
    let paged = params
        .iter()
        .any(|p| p["name"] == "cursor" || p["name"] == "limit");
    let body = op["requestBody"].is_object();
    let post = method == "post";
    let Some(responses) = op["responses"].as_object_mut() else {
        return;
    };
    let mut add = |status: &str| {
        responses
            .entry(status)
            .or_insert_with(|| error_response(""));
    };
    if secured {
        add("401");
        add("403");
    }
    if post || body || paged {
        add("400");
    }
    if post || body || in_query {
        add("422");
    }
    if in_path {
        add("404");
    }
    add("429");
}

/// Spec 8: every POST takes an optional `Idempotency-Key`.
fn add_idempotency_key(op: &mut Value) {
    let params = op
        .as_object_mut()
        .expect("an operation is an object")
        .entry("parameters")
        .or_insert_with(|| json!([]));
    let Some(params) = params.as_array_mut() else {
        return;
    };
    if params.iter().any(|p| p["name"] == "Idempotency-Key") {
        return;
    }
    params.push(json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Makes the POST safe to retry for 24 hours: a repeat with the same key \
    and request replays the first response (`Idempotent-Replayed: true`); the same key with \
    another request is 422 `idempotency_key_reused`.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}
    }));
}

/// The codes any operation answering `status` can carry, whatever it does.
fn generic_codes(status: &str, method: &str, op: &Value) -> Vec<&'static str> {
    let paged = op["parameters"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["name"] == "cursor"));
    match status {
        "400" if paged => vec![
            "bad_request",
            "invalid_cursor",
            "invalid_limit",
            "invalid_offset",
        ],
        "400" => vec!["bad_request"],
        "401" if op["security"].is_array() => vec!["unauthorized"],
        "403" if op["security"].is_array() => vec!["missing_permission"],
        "404" => vec!["not_found"],
        "413" => vec!["payload_too_large"],
        "422" if method == "post" => vec!["validation_failed", "idempotency_key_reused"],
        "422" => vec!["validation_failed"],
        "429" => vec!["rate_limited"],
        "500" => vec!["internal_error"],
        _ => vec![],
    }
}

/// Rewrites every 4xx/5xx response's description to name, in backticks, the `code`s it can
/// carry: those its annotation names (bare or in backticks) and the generic ones of its status.
fn name_error_codes(op: &mut Value, method: &str, codes: &BTreeSet<String>) {
    let statuses: Vec<String> = op["responses"]
        .as_object()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    // The operation's own text often says "409 `conflict` once ...": a code named there
    // belongs to the response of its status.
    let about = format!(
        "{} {}",
        op["summary"].as_str().unwrap_or(""),
        op["description"].as_str().unwrap_or("")
    );
    let in_prose: Vec<(String, String)> = about
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| codes.contains(*w))
        .filter_map(|w| Some((code_status(w)?, w.to_owned())))
        .collect();
    for status in statuses {
        if !(status.starts_with('4') || status.starts_with('5')) {
            continue;
        }
        let mut generic: Vec<&str> = in_prose
            .iter()
            .filter(|(s, _)| *s == status)
            .map(|(_, c)| c.as_str())
            .collect();
        generic.extend(generic_codes(&status, method, op));
        let response = &mut op["responses"][status.as_str()];
        let text = response["description"].as_str().unwrap_or("").to_owned();
        let (prose, named) = backtick_codes(&text, codes);
        let mut all: Vec<String> = named.clone();
        for g in generic {
            if !all.iter().any(|c| c == g) {
                all.push(g.to_owned());
            }
        }
        // What any 409 or 503 is when nothing more precise is known.
        if all.is_empty() {
            match status.as_str() {
                "409" => all.push("conflict".to_owned()),
                "503" => all.push("service_unavailable".to_owned()),
                _ => {}
            }
        }
        let list = all
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let only_codes = prose
            .split(|c: char| c.is_whitespace() || ",;.".contains(c))
            .all(|w| w.is_empty() || w == "or" || w == "and" || w.starts_with('`'));
        response["description"] = Value::String(if only_codes || prose.is_empty() {
            list
        } else if all.len() == named.len() {
            prose
        } else {
            format!("{list}. {prose}")
        });
    }
}

/// The status a code is answered with, as a string ("409").
fn code_status(code: &str) -> Option<String> {
    let code: ErrorCode = serde_json::from_value(Value::String(code.to_owned())).ok()?;
    Some(code.status().as_u16().to_string())
}

/// `text` with every bare code name put in backticks, and the codes it names in order.
fn backtick_codes(text: &str, codes: &BTreeSet<String>) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut named = Vec::new();
    let mut word = String::new();
    let mut in_code = false;
    let flush = |word: &mut String, out: &mut String, named: &mut Vec<String>, in_code: bool| {
        if codes.contains(word.as_str()) {
            if !named.contains(word) {
                named.push(word.clone());
            }
            if in_code {
                out.push_str(word);
            } else {
                out.push_str(&format!("`{word}`"));
            }
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out, &mut named, in_code);
        if c == '`' {
            in_code = !in_code;
        }
        out.push(c);
    }
    flush(&mut word, &mut out, &mut named, in_code);
    (out, named)
}

/// A struct under `#[serde(default)]` gives each field a `default`, nested objects included.
/// A nested object's default is what its own schema's defaults already say, and client
/// generators refuse a `default` on a reference: it is dropped there.
fn drop_object_defaults(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for schema in schemas.values_mut() {
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for prop in props.values_mut() {
            let is_ref = prop.get("$ref").is_some()
                || prop.get("oneOf").is_some()
                || prop.get("allOf").is_some();
            if is_ref && let Some(p) = prop.as_object_mut() {
                p.remove("default");
            }
        }
    }
}

/// A `oneOf` of inline `allOf`s told apart by one single-valued enum property (what utoipa
/// makes of `#[serde(tag = "status")]`) becomes a `oneOf` of named schemas with a
/// `discriminator`: client generators understand that form, not the inline one.
fn name_unions(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object().cloned() else {
        return;
    };
    for (name, schema) in schemas {
        let Some(variants) = schema["oneOf"].as_array() else {
            continue;
        };
        let mut tag: Option<String> = None;
        let mut named = Vec::new();
        for v in variants {
            let Some((prop, value)) = tag_of(v) else {
                named.clear();
                break;
            };
            if tag.as_ref().is_some_and(|t| *t != prop) {
                named.clear();
                break;
            }
            tag = Some(prop);
            named.push((value, v.clone()));
        }
        let Some(tag) = tag.filter(|_| !named.is_empty()) else {
            continue;
        };
        let mut one_of = Vec::new();
        let mut mapping = Map::new();
        for (value, mut v) in named {
            let variant = format!("{name}{}", pascal(&value));
            let reference = format!("#/components/schemas/{variant}");
            // The tag is required in each variant, so generators can read it.
            mark_required(&mut v, &tag);
            doc["components"]["schemas"][variant.as_str()] = v;
            one_of.push(json!({"$ref": reference}));
            mapping.insert(value, Value::String(reference));
        }
        let mut out = json!({
            "oneOf": one_of,
            "discriminator": {"propertyName": tag, "mapping": mapping},
        });
        if let Some(d) = schema.get("description") {
            out["description"] = d.clone();
        }
        doc["components"]["schemas"][name.as_str()] = out;
    }
}

/// The `(property, value)` a union variant is told apart by: the one property, among its
/// own or its `allOf` parts', whose schema is an enum of one value.
fn tag_of(v: &Value) -> Option<(String, String)> {
    let parts: Vec<&Value> = match v["allOf"].as_array() {
        Some(parts) => parts.iter().collect(),
        None => vec![v],
    };
    for part in parts {
        if let Some(props) = part["properties"].as_object() {
            for (prop, s) in props {
                if let Some([one]) = s["enum"].as_array().map(Vec::as_slice)
                    && let Some(value) = one.as_str()
                {
                    return Some((prop.clone(), value.to_owned()));
                }
            }
        }
    }
    None
}

fn mark_required(v: &mut Value, prop: &str) {
    let parts: Vec<&mut Value> = match v.get_mut("allOf").and_then(Value::as_array_mut) {
        Some(parts) => parts.iter_mut().collect(),
        None => vec![v],
    };
    for part in parts {
        if part["properties"].get(prop).is_some() {
            let req = part
                .as_object_mut()
                .expect("a schema with properties is an object")
                .entry("required")
                .or_insert_with(|| json!([]));
            if let Some(req) = req.as_array_mut()
                && !req.iter().any(|r| r == prop)
            {
                req.push(Value::String(prop.to_owned()));
            }
        }
    }
}

fn pascal(s: &str) -> String {
    s.split(['_', '-'])
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// OpenAPI `links` from each create (`POST /x` answering 201 with an `id`) to the operations
/// on what it created (`/x/{id}` and below), so a client (or a stateful fuzzer) can follow
/// the id it was handed. The other path parameters are the create's own.
fn add_links(doc: &mut Value, ops: &[(String, String)]) {
    for (path, method) in ops {
        if method != "post" {
            continue;
        }
        let created = &doc["paths"][path.as_str()]["post"]["responses"]["201"]["content"]["application/json"]
            ["schema"];
        if !has_prop(doc, created, "id") {
            continue;
        }
        // A create that hands out the secret its later calls send back (a storefront cart's
        // `token`, sent as `X-Cart-Token`) links it too, or those calls could only be refused.
        let hands_token = has_prop(doc, created, "token");
        let own_params: Vec<String> = params_of(path);
        let mut links = Map::new();
        for (target, target_method) in ops {
            let Some(rest) = target.strip_prefix(path.as_str()) else {
                continue;
            };
            // `/x/{id}` or `/x/{id}/...`: exactly one new parameter, right after the create's path.
            let Some(rest) = rest.strip_prefix("/{") else {
                continue;
            };
            let Some((id_param, tail)) = rest.split_once('}') else {
                continue;
            };
            if !(tail.is_empty() || tail.starts_with('/')) || tail.contains('{') {
                continue;
            }
            let op_id = doc["paths"][target.as_str()][target_method.as_str()]["operationId"]
                .as_str()
                .map(str::to_owned);
            let Some(op_id) = op_id else {
                continue;
            };
            let mut parameters = Map::new();
            for p in &own_params {
                parameters.insert(p.clone(), Value::String(format!("$request.path.{p}")));
            }
            parameters.insert(
                id_param.to_owned(),
                Value::String("$response.body#/id".to_owned()),
            );
            let target_params = doc["paths"][target.as_str()][target_method.as_str()]["parameters"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for p in target_params {
                if let Some(name) = p["name"].as_str()
                    && p["in"] == "header"
                    && name.ends_with("-Token")
                    && hands_token
                {
                    parameters.insert(
                        format!("header.{name}"),
                        Value::String("$response.body#/token".to_owned()),
                    );
                }
            }
            let mut link = link_to(doc, target, target_method, &op_id);
            link["parameters"] = Value::Object(parameters);
            links.insert(pascal(&op_id), link);
        }
        if !links.is_empty() {
            doc["paths"][path.as_str()]["post"]["responses"]["201"]["links"] = Value::Object(links);
        }
    }
}

/// A link's target: by `operationId`, or by `operationRef` where two operations of `doc`
/// share the id (the inbox's and the assistant's `get_conversation`, say), which a client
/// would otherwise resolve to whichever comes first.
fn link_to(doc: &Value, path: &str, method: &str, op_id: &str) -> Value {
    let sharing = operations(doc)
        .iter()
        .filter(|(p, m)| doc["paths"][p.as_str()][m.as_str()]["operationId"] == op_id)
        .count();
    if sharing > 1 {
        let escaped = path.replace('~', "~0").replace('/', "~1");
        json!({"operationRef": format!("#/paths/{escaped}/{method}")})
    } else {
        json!({"operationId": op_id})
    }
}

/// A link the create rule of [`add_links`] cannot find: the next step of a flow takes what
/// the previous one answered (or was sent) in its body or under another path.
struct Flow {
    /// The operation (path, method) and the status whose response carries the link.
    from: (&'static str, &'static str, &'static str),
    /// The target operation (path, method).
    to: (&'static str, &'static str),
    /// `name` (or `header.Name`) to a runtime expression, for the target's parameters.
    parameters: &'static [(&'static str, &'static str)],
    /// Body fields of the target to a runtime expression, or to a JSON template whose strings
    /// are runtime expressions (merged into the body).
    body: &'static [(&'static str, &'static str)],
}

/// The flows, each a step a client takes with what the one before handed it.
const FLOWS: &[Flow] = &[
    // A new account signs in with what it registered; a session renews with its refresh token.
    Flow {
        from: ("/auth/register", "post", "201"),
        to: ("/auth/login", "post"),
        parameters: &[],
        body: &[
            ("email", "$request.body#/email"),
            ("password", "$request.body#/password"),
        ],
    },
    Flow {
        from: ("/auth/login", "post", "200"),
        to: ("/auth/refresh", "post"),
        parameters: &[],
        body: &[("refresh_token", "$response.body#/refresh_token")],
    },
    Flow {
        from: ("/auth/refresh", "post", "200"),
        to: ("/auth/refresh", "post"),
        parameters: &[],
        body: &[("refresh_token", "$response.body#/refresh_token")],
    },
    // What a create hands out, in the body of the create that refers to it.
    Flow {
        from: ("/stores/{store_id}/customers", "post", "201"),
        to: ("/stores/{store_id}/orders", "post"),
        parameters: STORE,
        body: &[("customer_id", "$response.body#/id")],
    },
    Flow {
        from: ("/stores/{store_id}/customers", "post", "201"),
        to: ("/stores/{store_id}/orders/manual", "post"),
        parameters: STORE,
        body: &[("customer_id", "$response.body#/id")],
    },
    Flow {
        from: ("/stores/{store_id}/suppliers", "post", "201"),
        to: ("/stores/{store_id}/purchase-orders", "post"),
        parameters: STORE,
        body: &[("supplier_id", "$response.body#/id")],
    },
    Flow {
        from: ("/stores/{store_id}/products", "post", "201"),
        to: ("/stores/{store_id}/reviews", "post"),
        parameters: STORE,
        body: &[("product_id", "$response.body#/id")],
    },
    // A page's saved version is one to restore.
    Flow {
        from: ("/stores/{store_id}/pages/{page_id}", "patch", "200"),
        to: (
            "/stores/{store_id}/pages/{page_id}/versions/{version}/restore",
            "post",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("page_id", "$request.path.page_id"),
            ("version", "$response.body#/version"),
        ],
        body: &[],
    },
    // A placed purchase order receives a unit of its first line.
    Flow {
        from: (
            "/stores/{store_id}/purchase-orders/{purchase_order_id}/order",
            "post",
            "200",
        ),
        to: (
            "/stores/{store_id}/purchase-orders/{purchase_order_id}/receive",
            "post",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("purchase_order_id", "$request.path.purchase_order_id"),
        ],
        body: &[(
            "items",
            r#"[{"variant_id": "$response.body#/items/0/variant_id", "quantity": 1}]"#,
        )],
    },
    // A published workflow runs, pauses and resumes, and its version can be restored.
    Flow {
        from: (
            "/stores/{store_id}/workflows/{workflow_id}/publish",
            "post",
            "200",
        ),
        to: ("/stores/{store_id}/workflows/{workflow_id}/run", "post"),
        parameters: WORKFLOW,
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/workflows/{workflow_id}/publish",
            "post",
            "200",
        ),
        to: ("/stores/{store_id}/workflows/{workflow_id}/pause", "post"),
        parameters: WORKFLOW,
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/workflows/{workflow_id}/publish",
            "post",
            "200",
        ),
        to: (
            "/stores/{store_id}/workflows/{workflow_id}/versions/{version}/restore",
            "post",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("workflow_id", "$request.path.workflow_id"),
            ("version", "$response.body#/version"),
        ],
        body: &[],
    },
    // A run started by hand is read back.
    Flow {
        from: (
            "/stores/{store_id}/workflows/{workflow_id}/run",
            "post",
            "201",
        ),
        to: (
            "/stores/{store_id}/workflows/{workflow_id}/runs/{run_id}",
            "get",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("workflow_id", "$request.path.workflow_id"),
            ("run_id", "$response.body#/id"),
        ],
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/workflows/{workflow_id}/pause",
            "post",
            "200",
        ),
        to: ("/stores/{store_id}/workflows/{workflow_id}/resume", "post"),
        parameters: WORKFLOW,
        body: &[],
    },
    // A test event makes a delivery; a listed delivery can be sent again.
    Flow {
        from: (
            "/stores/{store_id}/webhooks/{webhook_id}/test",
            "post",
            "202",
        ),
        to: ("/stores/{store_id}/webhooks/{webhook_id}/deliveries", "get"),
        parameters: WEBHOOK,
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/webhooks/{webhook_id}/deliveries",
            "get",
            "200",
        ),
        to: (
            "/stores/{store_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
            "post",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("webhook_id", "$request.path.webhook_id"),
            ("delivery_id", "$response.body#/data/0/id"),
        ],
        body: &[],
    },
    // An invite's token, shown only in the create's answer, accepts it.
    Flow {
        from: ("/stores/{store_id}/invites", "post", "201"),
        to: ("/invites/{token}/accept", "post"),
        parameters: &[("token", "$response.body#/token")],
        body: &[],
    },
    // The assistant's newest conversation, its pending proposals, the actions taken.
    Flow {
        from: ("/stores/{store_id}/assistant/conversations", "get", "200"),
        to: (
            "/stores/{store_id}/assistant/conversations/{conversation_id}",
            "get",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("conversation_id", "$response.body#/data/0/id"),
        ],
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/assistant/conversations/{conversation_id}",
            "get",
            "200",
        ),
        to: (
            "/stores/{store_id}/assistant/proposals/{proposal_id}/approve",
            "post",
        ),
        parameters: PROPOSAL,
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/assistant/conversations/{conversation_id}",
            "get",
            "200",
        ),
        to: (
            "/stores/{store_id}/assistant/proposals/{proposal_id}/decline",
            "post",
        ),
        parameters: PROPOSAL,
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/assistant/conversations/{conversation_id}",
            "get",
            "200",
        ),
        to: ("/assistant/proposals/{proposal_id}/approve", "post"),
        parameters: &[("proposal_id", "$response.body#/pending_proposals/0/id")],
        body: &[],
    },
    Flow {
        from: (
            "/stores/{store_id}/assistant/conversations/{conversation_id}",
            "get",
            "200",
        ),
        to: ("/assistant/proposals/{proposal_id}/decline", "post"),
        parameters: &[("proposal_id", "$response.body#/pending_proposals/0/id")],
        body: &[],
    },
    Flow {
        from: ("/stores/{store_id}/assistant/actions", "get", "200"),
        to: (
            "/stores/{store_id}/assistant/actions/{action_id}/undo",
            "post",
        ),
        parameters: &[
            ("store_id", "$request.path.store_id"),
            ("action_id", "$response.body#/data/0/id"),
        ],
        body: &[],
    },
    // A storefront cart with items gets a contact, then is checked out, with its token.
    Flow {
        from: ("/storefront-api/{key}/carts/{cart_id}/items", "post", "200"),
        to: ("/storefront-api/{key}/carts/{cart_id}/customer", "put"),
        parameters: CART,
        body: &[],
    },
    Flow {
        from: ("/storefront-api/{key}/carts/{cart_id}/items", "post", "200"),
        to: ("/storefront-api/{key}/carts/{cart_id}/checkout", "post"),
        parameters: CART,
        body: &[],
    },
    Flow {
        from: ("/storefront-api/{key}/carts/{cart_id}/items", "post", "200"),
        to: (
            "/storefront-api/{key}/carts/{cart_id}/items/{variant_id}",
            "patch",
        ),
        parameters: CART_LINE,
        body: &[],
    },
    Flow {
        from: ("/storefront-api/{key}/carts/{cart_id}/items", "post", "200"),
        to: (
            "/storefront-api/{key}/carts/{cart_id}/items/{variant_id}",
            "delete",
        ),
        parameters: CART_LINE,
        body: &[],
    },
    Flow {
        from: (
            "/storefront-api/{key}/carts/{cart_id}/customer",
            "put",
            "200",
        ),
        to: ("/storefront-api/{key}/carts/{cart_id}/checkout", "post"),
        parameters: CART,
        body: &[],
    },
];

const STORE: &[(&str, &str)] = &[("store_id", "$request.path.store_id")];
const WORKFLOW: &[(&str, &str)] = &[
    ("store_id", "$request.path.store_id"),
    ("workflow_id", "$request.path.workflow_id"),
];
const PROPOSAL: &[(&str, &str)] = &[
    ("store_id", "$request.path.store_id"),
    ("proposal_id", "$response.body#/pending_proposals/0/id"),
];
const WEBHOOK: &[(&str, &str)] = &[
    ("store_id", "$request.path.store_id"),
    ("webhook_id", "$request.path.webhook_id"),
];
const CART_LINE: &[(&str, &str)] = &[
    ("key", "$request.path.key"),
    ("cart_id", "$request.path.cart_id"),
    ("variant_id", "$request.body#/variant_id"),
    ("header.X-Cart-Token", "$request.header.X-Cart-Token"),
];
const CART: &[(&str, &str)] = &[
    ("key", "$request.path.key"),
    ("cart_id", "$request.path.cart_id"),
    ("header.X-Cart-Token", "$request.header.X-Cart-Token"),
];

/// Adds the [`FLOWS`] whose two ends the document has (the storefront document has none
/// of the admin's).
fn add_flow_links(doc: &mut Value) {
    for flow in FLOWS {
        let (path, method, status) = flow.from;
        let (to_path, to_method) = flow.to;
        let Some(to_id) = doc["paths"]
            .get(to_path)
            .and_then(|item| item[to_method]["operationId"].as_str())
            .map(str::to_owned)
        else {
            continue;
        };
        let mut link = link_to(doc, to_path, to_method, &to_id);
        let Some(response) = doc
            .pointer_mut(&format!(
                "/paths/{}/{method}/responses/{status}",
                path.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if !flow.parameters.is_empty() {
            link["parameters"] = flow
                .parameters
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
                .collect::<Map<_, _>>()
                .into();
        }
        if !flow.body.is_empty() {
            // A bare expression is not JSON: it stays a string.
            let value = |v: &str| {
                serde_json::from_str(v)
                    .ok()
                    .filter(|t: &Value| t.is_object() || t.is_array())
                    .unwrap_or_else(|| Value::String(v.to_owned()))
            };
            link["requestBody"] = flow
                .body
                .iter()
                .map(|(k, v)| ((*k).to_owned(), value(v)))
                .collect::<Map<_, _>>()
                .into();
        }
        let links = response
            .entry("links")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("links is an object");
        let mut name = pascal(&to_id);
        while links.contains_key(&name) {
            name.push('_');
        }
        links.insert(name, link);
    }
}

/// Whether a response schema (a reference to a component, or inline) has property `name`.
fn has_prop(doc: &Value, schema: &Value, name: &str) -> bool {
    let schema = match schema["$ref"].as_str() {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or(&Value::Null),
        None => schema,
    };
    schema["properties"][name].is_object()
        || schema["allOf"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| has_prop(doc, p, name)))
}

/// The `{name}`s of a path template, in order.
fn params_of(path: &str) -> Vec<String> {
    path.split('{')
        .skip(1)
        .filter_map(|p| p.split_once('}').map(|(name, _)| name.to_owned()))
        .collect()
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
