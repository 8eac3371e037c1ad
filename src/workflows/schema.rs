//! The OpenAPI schemas of a workflow's definition (issue 21): a node per `type` with that
//! type's `config`, the trigger's three shapes, a condition's `value` by its `op`, built from
//! the validator's own tables and bounds, so a definition the document allows is one
//! [`super::validate::check`] takes but for what a schema cannot say (edges naming nodes,
//! one start, both branches of a condition, no loop without a wait).

use std::borrow::Cow;

use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, AnyOfBuilder, ArrayBuilder, KnownFormat, Object,
    ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::model::{
    NODE_TYPES, NoConfig, Node, NodePosition, Op, Predicate, SendEmailConfig, SendMessageConfig,
    TagCustomerConfig, Trigger, WaitConfig, Wants,
};
use super::validate;
use crate::events::Event;

type Schemas = Vec<(String, RefOr<Schema>)>;

/// `T`'s component and the ones it refers to.
fn register<T: ToSchema>(out: &mut Schemas) {
    out.push((T::name().into_owned(), T::schema()));
    T::schemas(out);
}

fn reference(name: &str) -> RefOr<Schema> {
    Ref::from_schema_name(name).into()
}

/// An object of exactly the properties given (the structs refuse unknown fields).
fn closed() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
}

fn of_type(t: impl Into<SchemaType>) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(t)
}

/// A string that is one of `values`.
fn one_of_strings<'a>(values: impl IntoIterator<Item = &'a str>) -> Object {
    of_type(Type::String).enum_values(Some(values)).build()
}

/// Text the validator trims and counts (`text_ok`): something that is not a space, at most
/// `max` characters.
pub(crate) fn text(max: usize) -> Object {
    of_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(max))
        .pattern(Some(r"\S"))
        .build()
}

/// `schema` or `null` (serde takes null as absent).
fn nullable(schema: impl Into<RefOr<Schema>>) -> Schema {
    OneOfBuilder::new()
        .item(of_type(Type::Null))
        .item(schema)
        .build()
        .into()
}

/// Any JSON value but `null`, which serde reads as "no value".
fn some_value() -> Schema {
    AnyOfBuilder::new()
        .item(of_type(Type::String))
        .item(of_type(Type::Number))
        .item(of_type(Type::Boolean))
        .item(ArrayBuilder::new().items(of_type(SchemaType::AnyValue)))
        .item(of_type(Type::Object))
        .build()
        .into()
}

/// A dotted path into a run's subject, as `check_predicate` reads it.
fn field_path() -> Object {
    of_type(Type::String)
        .max_length(Some(200))
        .pattern(Some(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$"))
        .description(Some(
            "A dotted path into the run's subject (`order.total_cents`, `customer.tags`).",
        ))
        .build()
}

/// The variants of a [`Predicate`], one per kind of `value` the ops want ([`Op::wants`]),
/// each a component of its own (client generators name inline unions poorly).
fn predicate_variants() -> [(&'static str, Object); 3] {
    [
        (
            "PredicateExists",
            Wants::Nothing,
            of_type(SchemaType::AnyValue).build().into(),
        ),
        (
            "PredicateNumber",
            Wants::Number,
            of_type(Type::Number).build().into(),
        ),
        ("PredicateValue", Wants::Some, some_value()),
    ]
    .map(|(name, wants, value): (_, _, Schema)| {
        let ops = Op::ALL
            .iter()
            .filter(|o| o.wants() == wants)
            .map(|o| o.as_str());
        let mut v = closed()
            .property("field", field_path())
            .required("field")
            .property("op", one_of_strings(ops))
            .required("op")
            .property("value", value);
        if wants != Wants::Nothing {
            v = v.required("value");
        }
        (name, v.build())
    })
}

impl PartialSchema for Predicate {
    fn schema() -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some(
            "A comparison: `value` is a number with `gt`, `gte`, `lt` and `lte`, any value \
             but null with `eq`, `ne` and `contains`, and not needed with `exists`.",
        ));
        for (name, _) in predicate_variants() {
            one_of = one_of.item(reference(name));
        }
        one_of.into()
    }
}

impl ToSchema for Predicate {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Predicate")
    }

    fn schemas(out: &mut Schemas) {
        for (name, schema) in predicate_variants() {
            out.push((name.to_owned(), schema.into()));
        }
    }
}

impl PartialSchema for WaitConfig {
    /// Exactly one of `seconds` and `until` (the other absent or null).
    fn schema() -> RefOr<Schema> {
        let seconds = of_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(validate::MAX_WAIT_SECONDS))
            .description(Some("1 s to 365 days; on a loop, at least an hour."));
        let until =
            of_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)));
        OneOfBuilder::new()
            .description(Some(
                "`wait`: exactly one of `seconds` (1 s to 365 days) or `until` (an RFC 3339 \
                 time).",
            ))
            .item(
                closed()
                    .property("seconds", seconds)
                    .required("seconds")
                    .property("until", of_type(Type::Null)),
            )
            .item(
                closed()
                    .property("until", until)
                    .required("until")
                    .property("seconds", of_type(Type::Null)),
            )
            .into()
    }
}

impl ToSchema for WaitConfig {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("WaitConfig")
    }
}

/// A node type's `config` schema and whether the node needs one: the same types
/// [`Node::step`] reads the config as.
fn node_config(node_type: &str) -> Option<(&'static str, bool)> {
    Some(match node_type {
        "wait" => ("WaitConfig", true),
        "condition" => ("Predicate", true),
        "send_message" => ("SendMessageConfig", true),
        "send_email" => ("SendEmailConfig", true),
        "tag_customer" => ("TagCustomerConfig", true),
        "webhook" | "end" => ("NoConfig", false),
        _ => return None,
    })
}

impl PartialSchema for Node {
    /// One variant per [`NODE_TYPES`] entry, told apart by `type`.
    fn schema() -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some(
            "A step of the graph: its `type` and that type's `config` (`webhook` and `end` \
             take none, or `{}`). `id` names it in the edges; `position` is where the editor \
             drew it.",
        ));
        for t in NODE_TYPES {
            let Some((config, required)) = node_config(t) else {
                continue;
            };
            let mut v = closed()
                .property("id", text(64))
                .required("id")
                .property("type", one_of_strings([t]))
                .required("type")
                .property("position", reference(NodePosition::name().as_ref()));
            v = if required {
                v.property("config", reference(config)).required("config")
            } else {
                v.property("config", nullable(reference(config)))
            };
            one_of = one_of.item(v);
        }
        one_of.into()
    }
}

impl ToSchema for Node {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Node")
    }

    fn schemas(out: &mut Schemas) {
        register::<NodePosition>(out);
        register::<WaitConfig>(out);
        register::<Predicate>(out);
        register::<SendMessageConfig>(out);
        register::<SendEmailConfig>(out);
        register::<TagCustomerConfig>(out);
        register::<NoConfig>(out);
    }
}

/// The schema of an edge's `branch`: `true` or `false` out of a condition, absent elsewhere.
pub struct Branch;

impl PartialSchema for Branch {
    fn schema() -> RefOr<Schema> {
        one_of_strings(["true", "false"]).into()
    }
}

impl ToSchema for Branch {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Branch")
    }
}

/// The schema of an event a trigger may name: the catalog's store events less the ones
/// workflows and tests emit themselves ([`validate::store_event`]).
pub struct TriggerEventName;

impl PartialSchema for TriggerEventName {
    fn schema() -> RefOr<Schema> {
        let names = Event::ALL
            .iter()
            .map(|e| e.as_str())
            .filter(|n| validate::store_event(n).is_some());
        one_of_strings(names).into()
    }
}

impl ToSchema for TriggerEventName {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("TriggerEventName")
    }
}

/// A template parameter of `send_message`.
pub fn template_parameters() -> ArrayBuilder {
    ArrayBuilder::new().items(text(1024)).max_items(Some(10))
}

/// A customer tag, as `customers::model::tag` takes it.
pub fn tag() -> Object {
    crate::customers::model::tag_schema()
}

impl PartialSchema for Trigger {
    /// `manual`, `schedule` (exactly one of `cron` and `every_seconds`) or `event`.
    fn schema() -> RefOr<Schema> {
        let kind = |t: &str| one_of_strings([t]);
        let manual = closed().property("type", kind("manual")).required("type");
        // A cron's shape: five fields of the characters a cron uses (the parser checks the
        // values: 422 `workflow_invalid`).
        let cron = of_type(Type::String)
            .pattern(Some(
                r"^\s*[0-9A-Za-z*?,/#-]+(\s+[0-9A-Za-z*?,/#-]+){4}\s*$",
            ))
            .description(Some(
                "Five fields: minute hour day-of-month month day-of-week, on the store's clock.",
            ));
        let every = of_type(Type::Integer)
            .minimum(Some(validate::MIN_EVERY_SECONDS))
            .maximum(Some(validate::MAX_WAIT_SECONDS));
        let schedule_fields = closed()
            .property("type", kind("schedule"))
            .required("type")
            .property("cron", nullable(cron))
            .property("every_seconds", nullable(every))
            .property(
                "timezone",
                of_type(SchemaType::Array(vec![Type::String, Type::Null])).description(Some(
                    "The store's IANA zone; whatever a client sends is replaced.",
                )),
            );
        let exactly_one = OneOfBuilder::new()
            .item(
                of_type(Type::Object)
                    .property("cron", of_type(Type::String))
                    .required("cron")
                    .property("every_seconds", of_type(Type::Null)),
            )
            .item(
                of_type(Type::Object)
                    .property("every_seconds", of_type(Type::Integer))
                    .required("every_seconds")
                    .property("cron", of_type(Type::Null)),
            );
        let schedule = AllOfBuilder::new()
            .item(schedule_fields)
            .item(exactly_one)
            .description(Some(
                "Exactly one of `cron` and `every_seconds` (at least 60).",
            ));
        let event = closed()
            .property("type", kind("event"))
            .required("type")
            .property("event", reference("TriggerEventName"))
            .required("event")
            .property("filter", nullable(reference("Predicate")));
        OneOfBuilder::new()
            .description(Some(
                "What starts a run: `manual` (the run endpoint), `schedule` (a cron on the \
                 store's clock, or every so many seconds) or `event` (a store event of the \
                 webhook catalog, with an optional `filter` on its payload).",
            ))
            .item(manual)
            .item(schedule)
            .item(event)
            .into()
    }
}

impl ToSchema for Trigger {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Trigger")
    }

    fn schemas(out: &mut Schemas) {
        register::<TriggerEventName>(out);
        register::<Predicate>(out);
    }
}

/// A graph [`validate::check`] takes (the documents' example): an hour after the start, a
/// big order's customer is tagged `vip`.
pub fn graph_example() -> serde_json::Value {
    serde_json::json!({
        "nodes": [
            {"id": "wait", "type": "wait", "config": {"seconds": 3600},
             "position": {"x": 0, "y": 0}},
            {"id": "big_order", "type": "condition",
             "config": {"field": "order.total_cents", "op": "gte", "value": 50_000},
             "position": {"x": 0, "y": 120}},
            {"id": "vip", "type": "tag_customer", "config": {"tag": "vip"},
             "position": {"x": -80, "y": 240}},
            {"id": "end", "type": "end", "position": {"x": 80, "y": 360}}
        ],
        "edges": [
            {"from": "wait", "to": "big_order"},
            {"from": "big_order", "to": "vip", "branch": "true"},
            {"from": "big_order", "to": "end", "branch": "false"},
            {"from": "vip", "to": "end"}
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::node_config;
    use crate::workflows::model::NODE_TYPES;

    #[test]
    fn the_example_graph_is_valid() {
        let graph = serde_json::from_value(super::graph_example()).unwrap();
        let ctx = crate::workflows::validate::Context {
            smtp: false,
            timezone: "UTC".into(),
        };
        let manual = serde_json::json!({"type": "manual"});
        crate::workflows::validate::check(&graph, &manual, &ctx).unwrap();
    }

    #[test]
    fn every_node_type_has_a_config_schema() {
        for t in NODE_TYPES {
            assert!(node_config(t).is_some(), "{t}");
        }
    }
}
