//! Workflow DTOs and the typed graph and trigger the validator produces (and the runner reads).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::ids::{StoreId, UserId, WorkflowId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowKind {
    Journey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowStatus {
    /// Never published: nothing fires.
    Draft,
    /// The published copy fires.
    Published,
    /// Published once, stopped for now: nothing fires until resumed.
    Paused,
}

impl WorkflowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Published => "published",
            Self::Paused => "paused",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "draft" => Some(Self::Draft),
            "published" => Some(Self::Published),
            "paused" => Some(Self::Paused),
            _ => None,
        }
    }
}

/// Where the editor drew a node; the server only keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodePosition {
    pub x: f64,
    pub y: f64,
}

/// A node as stored: its `config` is kept as sent and checked against its `type` by
/// [`super::validate`]; [`Node::step`] reads it typed. (Its schema, one variant per type, is
/// in [`super::schema`].)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    #[serde(rename = "type")]
    pub node_type: String,
    /// Missing is a `workflow_invalid` problem (except for `end` and `webhook`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(default)]
    pub position: NodePosition,
}

/// `from` -> `to`; `branch` is `true` or `false` on the edges out of a `condition`, absent
/// (null) elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: String,
    pub to: String,
    #[serde(default)]
    #[schema(value_type = Option<super::schema::Branch>)]
    pub branch: Option<String>,
}

/// The steps and the edges between them: exactly one node (the start) has no edge in, every
/// node is reachable from it, a `condition` has a `true` and a `false` edge out, an `end`
/// none, any other node at most one, and a loop goes through a `wait` of an hour or more.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = super::schema::graph_example)]
pub struct Graph {
    /// 1 to 200, each `id` once.
    #[schema(min_items = 1, max_items = 200)]
    pub nodes: Vec<Node>,
    /// Up to 400.
    #[serde(default)]
    #[schema(max_items = 400)]
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Each node's config as its step reads it (see [`Node::read_step`]); before it is
    /// checked and stored.
    pub fn normalize_numbers(&mut self) {
        for node in &mut self.nodes {
            let _ = node.read_step();
        }
    }

    /// The node no edge leads to (validation makes sure there is exactly one).
    pub fn start(&self) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| !self.edges.iter().any(|e| e.to == n.id))
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Where a step goes next: the edge out of `from` (on `branch` for a condition).
    pub fn next(&self, from: &str, branch: Option<bool>) -> Option<&Node> {
        let want = branch.map(|b| if b { "true" } else { "false" });
        self.edges
            .iter()
            .find(|e| e.from == from && e.branch.as_deref() == want)
            .and_then(|e| self.node(&e.to))
    }
}

/// The comparison of a `condition` node and of an event trigger's `filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Contains,
    Exists,
}

/// What an [`Op`] needs as its `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wants {
    /// Nothing: `exists` ignores any value.
    Nothing,
    /// A number.
    Number,
    /// Any value but null.
    Some,
}

impl Op {
    pub const ALL: [Op; 8] = [
        Op::Eq,
        Op::Ne,
        Op::Gt,
        Op::Gte,
        Op::Lt,
        Op::Lte,
        Op::Contains,
        Op::Exists,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::Gt => "gt",
            Op::Gte => "gte",
            Op::Lt => "lt",
            Op::Lte => "lte",
            Op::Contains => "contains",
            Op::Exists => "exists",
        }
    }

    /// What the validator requires of `value` with this op (and the schema says).
    pub fn wants(self) -> Wants {
        match self {
            Op::Exists => Wants::Nothing,
            Op::Gt | Op::Gte | Op::Lt | Op::Lte => Wants::Number,
            Op::Eq | Op::Ne | Op::Contains => Wants::Some,
        }
    }
}

/// `field` is a dotted path into the run's subject (`order.total_cents`, `customer.tags`).
/// (Its schema is in [`super::schema`]: one variant per kind of `value`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    pub field: String,
    pub op: Op,
    /// Required except with `exists`; a number with `gt`, `gte`, `lt`, `lte`.
    #[serde(default)]
    pub value: Option<Value>,
}

/// `wait`: exactly one of `seconds` (1 s to 365 days) or `until` (an RFC 3339 time).
/// (Its schema is in [`super::schema`].)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitConfig {
    #[serde(default)]
    pub seconds: Option<i64>,
    #[serde(default)]
    pub until: Option<String>,
}

/// `send_message`: a messaging-app template sent to the run's customer from the store's
/// number, as the provider requires outside the 24-hour window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageConfig {
    /// The approved template's name at the provider (`[a-z0-9_]`).
    #[schema(min_length = 1, max_length = 512, pattern = r"^[a-z0-9_]+$")]
    pub template: String,
    /// The template's language code (`pt_BR`); default the store's locale.
    #[serde(default)]
    #[schema(pattern = r"^[a-z]{2,3}(_[A-Z]{2})?$")]
    pub language: Option<String>,
    /// The template's body parameters, in order (up to 10, each 1 to 1024 characters);
    /// `{{customer.name}}`-style fields allowed.
    #[serde(default)]
    #[schema(schema_with = super::schema::template_parameters)]
    pub parameters: Vec<String>,
}

/// `send_email`: over the SMTP sender (`--smtp-url`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendEmailConfig {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub subject: String,
    #[schema(min_length = 1, max_length = 20_000, pattern = r"\S")]
    pub body: String,
}

/// `tag_customer`: adds a tag to the run's customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TagCustomerConfig {
    /// 1 to 64 characters, no control characters.
    #[schema(schema_with = super::schema::tag)]
    pub tag: String,
}

/// Nodes with nothing to configure (`webhook`, `end`) take `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

/// A node's `type` and `config`, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Wait(WaitConfig),
    /// Goes on along the `true` or the `false` edge.
    Condition(Predicate),
    SendMessage(SendMessageConfig),
    SendEmail(SendEmailConfig),
    TagCustomer(TagCustomerConfig),
    /// Emits `workflow.step` to the store's webhooks.
    Webhook,
    End,
}

/// Every node type, as `type` names it.
pub const NODE_TYPES: [&str; 7] = [
    "wait",
    "condition",
    "send_message",
    "send_email",
    "tag_customer",
    "webhook",
    "end",
];

impl Node {
    /// The node's step; Err names what is wrong with the `type` or the `config` shape (the
    /// validator adds the checks of the values).
    pub fn step(&self) -> Result<Step, String> {
        self.clone().read_step()
    }

    /// As [`Node::step`], and a config read only with its whole numbers written with a
    /// fraction (`60.0`) made integers keeps those integers: the graph is stored as sent, and
    /// its readers (clients, an older binary after a roll back) then find what the schema says.
    pub fn read_step(&mut self) -> Result<Step, String> {
        fn parse<T: serde::de::DeserializeOwned>(v: &mut Value) -> Result<T, String> {
            crate::json::from_value_mut(v).map_err(|e| {
                let path = e.path().to_string();
                let msg = e.inner().to_string();
                if path == "." {
                    format!("config: {msg}")
                } else {
                    format!("config.{path}: {msg}")
                }
            })
        }
        let kind = self.node_type.as_str();
        if matches!(kind, "webhook" | "end") {
            let mut empty = Value::Object(serde_json::Map::new());
            parse::<NoConfig>(self.config.as_mut().unwrap_or(&mut empty))?;
            return Ok(if kind == "end" {
                Step::End
            } else {
                Step::Webhook
            });
        }
        if !NODE_TYPES.contains(&kind) {
            return Err(format!(
                "unknown node type {kind:?} (one of {})",
                NODE_TYPES.join(", ")
            ));
        }
        let Some(config) = self.config.as_mut() else {
            return Err(format!("a {kind} node needs a config"));
        };
        Ok(match kind {
            "wait" => Step::Wait(parse(config)?),
            "condition" => Step::Condition(parse(config)?),
            "send_message" => Step::SendMessage(parse(config)?),
            "send_email" => Step::SendEmail(parse(config)?),
            _ => Step::TagCustomer(parse(config)?),
        })
    }
}

/// What starts a run. `schedule` has exactly one of `cron` (5 fields: minute hour day
/// month weekday) or `every_seconds` (at least 60); `timezone` is the store's, set by the
/// server. `event` names a store event of the webhook catalog, with an optional `filter`.
/// (Its schema is in [`super::schema`].)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Trigger {
    Manual,
    Schedule {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cron: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        every_seconds: Option<i64>,
        /// The store's IANA zone; whatever a client sends is replaced.
        #[serde(default)]
        timezone: Option<String>,
    },
    Event {
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filter: Option<Predicate>,
    },
}

/// The workflow object of spec 2.10 (also the answer of restore).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkflowOut {
    pub id: WorkflowId,
    pub store_id: StoreId,
    pub created_by: UserId,
    pub name: String,
    pub description: String,
    pub kind: WorkflowKind,
    pub status: WorkflowStatus,
    /// The latest published version; 0 before the first publish.
    pub version: i32,
    pub graph: Graph,
    pub trigger: Trigger,
    pub published_graph: Option<Graph>,
    pub published_trigger: Option<Trigger>,
    pub published_at: Option<String>,
    pub last_run_at: Option<String>,
    pub next_fire_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowIn {
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"\S",
        example = "Tag big spenders"
    )]
    pub name: String,
    /// Up to 2,000 characters.
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Default (and only value) `journey`.
    #[serde(default)]
    pub kind: Option<WorkflowKind>,
    pub graph: Graph,
    /// Default `{"type": "manual"}`. A wrong shape is a `workflow_invalid` problem.
    #[serde(default)]
    #[schema(value_type = Option<Trigger>)]
    pub trigger: Option<Value>,
}

/// Saves the draft: any subset; the published copy is untouched until publish.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: Option<String>,
    /// Up to 2,000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    pub graph: Option<Graph>,
    /// A wrong shape is a `workflow_invalid` problem.
    #[schema(value_type = Option<Trigger>)]
    pub trigger: Option<Value>,
}

/// A row of the versions list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionSummary {
    pub version: i32,
    pub published_at: String,
    pub published_by: UserId,
}

/// One published version, as it was published (immutable).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionOut {
    pub version: i32,
    pub published_at: String,
    pub published_by: UserId,
    pub graph: Graph,
    pub trigger: Trigger,
}

/// One `workflow_invalid` problem: on a node, on an edge (its index in `edges`), or on the
/// workflow as a whole (the trigger, the start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Problem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<usize>,
    pub message: String,
}
