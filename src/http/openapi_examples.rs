//! Examples for the OpenAPI documents (issue 21): every JSON request body and response gets
//! an `example` on its media type, built from its schema, so the reference shows a body to
//! copy for every operation. The values follow each schema's own rules (enums, formats,
//! lengths, bounds, required fields) and read like the field they fill (`*_cents` is money,
//! `*_at` a time), so an example is a request the API would accept but for its ids.
//! `.ci/openapi-check` validates every example against its schema.

use serde_json::{Map, Value, json};

/// How deep a schema is followed before a nested value is left out: the documents have
/// recursive shapes (a workflow's steps hold steps).
const MAX_DEPTH: usize = 8;

/// Adds an `example` to every `application/json` request body and response of `doc` that
/// has none.
pub fn add(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let Some(op) = op.as_object_mut() else {
                continue;
            };
            // Each JSON media type, with the first error code its response names.
            let mut media: Vec<(&mut Value, Option<String>)> = Vec::new();
            for (key, part) in op.iter_mut() {
                match key.as_str() {
                    "requestBody" => media.extend(
                        part.get_mut("content")
                            .and_then(|c| c.get_mut("application/json"))
                            .map(|m| (m, None)),
                    ),
                    "responses" => {
                        if let Some(responses) = part.as_object_mut() {
                            for r in responses.values_mut() {
                                let code = first_code(r);
                                if let Some(m) = r
                                    .get_mut("content")
                                    .and_then(|c| c.get_mut("application/json"))
                                {
                                    media.push((m, code));
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            for (m, code) in media {
                if m.get("example").is_some() || m.get("examples").is_some() {
                    continue;
                }
                let Some(schema) = m.get("schema") else {
                    continue;
                };
                let is_error = schema["$ref"] == "#/components/schemas/ErrorBody";
                let example = match code {
                    Some(code) if is_error => Some(error_example(&code)),
                    _ => Gen::new(&schemas).value(schema, "", 0),
                };
                if let Some(example) = example {
                    m["example"] = example;
                }
            }
        }
    }
}

/// The first code in backticks in an error response's description (`finish` names them).
fn first_code(response: &Value) -> Option<String> {
    let text = response.get("description")?.as_str()?;
    Some(text.split('`').nth(1)?.to_owned()).filter(|c| !c.is_empty())
}

/// An error body carrying `code`, with a message made of its words.
fn error_example(code: &str) -> Value {
    let words = code.replace('_', " ");
    let mut message: String = words.chars().take(1).flat_map(char::to_uppercase).collect();
    message.push_str(&words[words.chars().next().map_or(0, char::len_utf8)..]);
    json!({ "error": message, "code": code })
}

/// Builds values from schemas, resolving `#/components/schemas/...` references.
struct Gen<'a> {
    schemas: &'a Value,
}

impl<'a> Gen<'a> {
    fn new(schemas: &'a Value) -> Self {
        Self { schemas }
    }

    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        let mut s = schema;
        // A reference to a reference is followed a few times at most.
        for _ in 0..4 {
            match s.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix("#/components/schemas/") {
                    Some(name) => s = &self.schemas[name],
                    None => return s,
                },
                None => return s,
            }
        }
        s
    }

    /// A value for `schema`, filling a field called `field` (its name guides the value);
    /// `None` when the schema cannot be followed further.
    fn value(&self, schema: &Value, field: &str, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let s = self.resolve(schema);
        if let Some(v) = s.get("example").or_else(|| s.get("const")) {
            return Some(v.clone());
        }
        if let Some(v) = s.get("examples").and_then(|e| e.get(0)) {
            return Some(v.clone());
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            return values.iter().find(|v| !v.is_null()).cloned();
        }
        if let Some(variants) = s
            .get("oneOf")
            .or_else(|| s.get("anyOf"))
            .and_then(Value::as_array)
        {
            // The first variant that is not `null` (an optional field's value).
            return variants
                .iter()
                .filter(|v| self.resolve(v).get("type") != Some(&json!("null")))
                .find_map(|v| self.value(v, field, depth + 1));
        }
        if let Some(parts) = s.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in parts {
                match self.value(part, field, depth + 1)? {
                    Value::Object(o) => merged.extend(o),
                    other if parts.len() == 1 => return Some(other),
                    _ => {}
                }
            }
            return Some(Value::Object(merged));
        }
        if let Some(default) = s.get("default") {
            return Some(default.clone());
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            // `["string", "null"]`: the value, not the absence.
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null"),
            _ if s.get("properties").is_some() => "object",
            _ => return Some(json!({})),
        };
        match ty {
            "object" => self.object(s, depth),
            "array" => {
                let item = self.value(s.get("items").unwrap_or(&json!({})), field, depth + 1);
                let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(1);
                let max = s
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .unwrap_or(u64::MAX);
                let n = min.max(1).min(max);
                let unique = s.get("uniqueItems") == Some(&json!(true));
                Some(Value::Array(match item {
                    // Unique items: one is enough unless more are required.
                    Some(v) if !unique || n == 1 => vec![v; usize::try_from(n).unwrap_or(1)],
                    Some(v) => vec![v],
                    None => Vec::new(),
                }))
            }
            "string" => Some(Value::String(string(s, field))),
            "integer" => Some(json!(integer(s, field))),
            "number" => Some(json!(number(s))),
            "boolean" => Some(json!(field != "disabled" && field != "archived")),
            "null" => Some(Value::Null),
            _ => Some(json!({})),
        }
    }

    fn object(&self, s: &Value, depth: usize) -> Option<Value> {
        let mut out = Map::new();
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, prop) in props {
                match self.value(prop, name, depth + 1) {
                    Some(v) => {
                        out.insert(name.clone(), v);
                    }
                    // A required field that cannot be shown makes the whole value wrong.
                    None if required.contains(&name.as_str()) => return None,
                    None => {}
                }
            }
        } else if let Some(extra) = s.get("additionalProperties").filter(|v| v.is_object())
            && let Some(v) = self.value(extra, "", depth + 1)
        {
            // A map whose keys are an enum shows its first.
            let key = s
                .pointer("/propertyNames/enum/0")
                .and_then(Value::as_str)
                .unwrap_or("key");
            out.insert(key.to_owned(), v);
        }
        Some(Value::Object(out))
    }
}

/// A string for `field` that keeps the schema's format and length bounds.
fn string(s: &Value, field: &str) -> String {
    let format = s.get("format").and_then(Value::as_str).unwrap_or("");
    let base: String = match format {
        "uuid" => uuid_for(field),
        // An expiry or an expected date is in the future, or the API refuses it.
        "date-time" if field.starts_with("expires") || field.starts_with("expected") => {
            "2036-03-14T15:09:26Z".to_owned()
        }
        "date-time" => "2026-03-14T15:09:26Z".to_owned(),
        "date" => "2026-03-14".to_owned(),
        "email" => "ana@example.com".to_owned(),
        "uri" | "url" => "https://shop.example.com/".to_owned(),
        "binary" | "byte" => "aGVsbG8=".to_owned(),
        _ => by_name(field),
    };
    let min = s
        .get("minLength")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let max = s
        .get("maxLength")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX);
    // An anchored pattern (a slug, a token's printable characters, a URL): text with
    // spaces or capitals becomes a slug, which those patterns accept; a URL stays as it is.
    let anchored = s
        .get("pattern")
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with('^'));
    let spaced = base.chars().any(|c| c.is_whitespace() || c.is_uppercase());
    let mut out = if anchored && format.is_empty() && spaced {
        slug(&base)
    } else {
        base
    };
    while out.chars().count() < min {
        out.push('x');
    }
    if out.chars().count() > max {
        out = out.chars().take(max).collect();
    }
    out
}

/// `s` in lower case, with runs of anything but letters and digits as one `-`.
fn slug(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A plausible value for a text field with no format, from its name.
fn by_name(field: &str) -> String {
    let f = field;
    let v = if f.ends_with("_at") || f == "since" || f == "until" || f == "from" || f == "to" {
        "2026-03-14T15:09:26Z"
    } else if f.ends_with("_id") || f == "id" {
        return uuid_for(f);
    } else if f.contains("email") {
        "ana@example.com"
    } else if f.contains("phone") || f == "msisdn" || f == "to_number" {
        "+5511999990000"
    } else if f.contains("url") || f == "endpoint" || f == "origin" {
        "https://shop.example.com/"
    } else if f == "currency" {
        "BRL"
    } else if f == "locale" || f == "language" {
        "pt-BR"
    } else if f.contains("time_zone") || f == "timezone" {
        "America/Sao_Paulo"
    } else if f == "slug" || f == "handle" {
        "summer-sale"
    } else if f == "sku" {
        "TSHIRT-BLUE-M"
    } else if f.contains("password") {
        "correct horse battery staple"
    } else if f == "code" || f.ends_with("_code") {
        "123456"
    } else if f == "cursor" || f == "next_cursor" {
        "eyJrIjoiMjAyNi0wMy0xNCJ9"
    } else if f == "name" || f.ends_with("_name") {
        "Blue T-shirt"
    } else if f == "title" || f == "subject" {
        "Summer sale"
    } else if f == "body" || f == "text" || f == "content" || f == "markdown" {
        "Hello! Your order is on its way."
    } else if f == "note" || f == "reason" || f == "description" {
        "Requested by the customer"
    } else if f == "token" || f == "value" || f.ends_with("_token") || f == "secret" {
        "mat_4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99"
    } else if f.is_empty() {
        "example"
    } else {
        return f.replace('_', " ");
    };
    v.to_owned()
}

/// A fixed UUID per kind of id, so one example's ids read as the same thing throughout.
fn uuid_for(field: &str) -> String {
    let mut h: u32 = 2_166_136_261;
    for b in field.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
    }
    format!("{h:08x}-8b1e-4b8a-9a51-6a1f0d2c4e7b")
}

/// An integer inside the schema's bounds that reads like the field.
fn integer(s: &Value, field: &str) -> i64 {
    let base: i64 = if field.ends_with("_cents") {
        4990
    } else if field == "limit" || field == "per_page" {
        50
    } else if field.contains("quantity") || field == "count" {
        2
    } else if field == "rating" {
        5
    } else {
        1
    };
    clamp(base, s)
}

fn number(s: &Value) -> f64 {
    let min = s.get("minimum").and_then(Value::as_f64);
    let max = s.get("maximum").and_then(Value::as_f64);
    let mut v: f64 = 1.5;
    if let Some(min) = min {
        v = v.max(min);
    }
    if let Some(max) = max {
        v = v.min(max);
    }
    v
}

fn clamp(v: i64, s: &Value) -> i64 {
    let mut v = v;
    if let Some(min) = s.get("minimum").and_then(Value::as_i64) {
        v = v.max(min);
    }
    if let Some(min) = s.get("exclusiveMinimum").and_then(Value::as_i64) {
        v = v.max(min + 1);
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_i64) {
        v = v.min(max);
    }
    if let Some(max) = s.get("exclusiveMaximum").and_then(Value::as_i64) {
        v = v.min(max - 1);
    }
    v
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn examples_follow_the_schema_and_read_like_their_fields() {
        let mut doc = json!({
            "components": {"schemas": {
                "Status": {"type": "string", "enum": ["open", "closed"]},
                "Id": {"type": "string", "format": "uuid"},
                "Line": {"type": "object", "required": ["quantity"],
                    "properties": {"quantity": {"type": "integer", "minimum": 1, "maximum": 1}}},
                "In": {"type": "object", "required": ["amount_cents", "status"], "properties": {
                    "amount_cents": {"type": "integer", "minimum": 1, "maximum": 100},
                    "status": {"$ref": "#/components/schemas/Status"},
                    "note": {"type": ["string", "null"], "maxLength": 3},
                    "id": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Id"}]},
                    "lines": {"type": "array", "minItems": 2, "items": {"$ref": "#/components/schemas/Line"}},
                    "created_at": {"type": "string"},
                    "slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                    "name": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                    "url": {"type": "string", "pattern": "^https?://[a-z0-9.]+(/.*)?$"}
                }}
            }},
            "paths": {"/x": {"post": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/In"}}}},
                "responses": {
                    "200": {"content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Status"}}}}},
                    "422": {"description": "`validation_failed`, `idempotency_key_reused`",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
                }
            }}}
        });
        super::add(&mut doc);
        let op = &doc["paths"]["/x"]["post"];
        let ex = &op["requestBody"]["content"]["application/json"]["example"];
        assert_eq!(ex["amount_cents"], 100, "the maximum bounds the example");
        assert_eq!(ex["status"], "open");
        assert_eq!(ex["note"], "Req", "maxLength cuts the text");
        assert_eq!(ex["id"].as_str().unwrap().len(), 36);
        assert_eq!(ex["lines"], json!([{"quantity": 1}, {"quantity": 1}]));
        assert_eq!(ex["created_at"], "2026-03-14T15:09:26Z");
        assert_eq!(ex["slug"], "summer-sale");
        assert_eq!(
            ex["name"], "blue-t-shirt",
            "a slug pattern makes text a slug"
        );
        assert_eq!(ex["url"], "https://shop.example.com/", "a URL stays a URL");
        assert_eq!(
            op["responses"]["200"]["content"]["application/json"]["example"],
            json!(["open"])
        );
        assert_eq!(
            op["responses"]["422"]["content"]["application/json"]["example"],
            json!({"error": "Validation failed", "code": "validation_failed"}),
            "an error's example carries the first code its response names"
        );
    }
}
