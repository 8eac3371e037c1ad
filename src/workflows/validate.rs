//! The checks a workflow passes on save and on publish. They collect every problem rather
//! than stopping at the first, so the editor can mark them all at once.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::model::{Graph, Predicate, Problem, Step, Trigger, Wants};
use crate::error::{AppError, ErrorCode};
use crate::events::Event;

/// Past this the editor is the wrong tool (and a run's walk stays cheap).
pub const MAX_NODES: usize = 200;
pub const MAX_EDGES: usize = 400;
pub const MAX_WAIT_SECONDS: i64 = 365 * 24 * 3600;
/// The shortest wait on a loop: a looping journey turns at most once an hour.
pub const MIN_LOOP_WAIT_SECONDS: i64 = 3600;
/// A schedule faster than this is a loop, not a journey.
pub const MIN_EVERY_SECONDS: i64 = 60;

/// What the checks need from outside the workflow.
#[derive(Debug, Clone)]
pub struct Context {
    /// Whether an SMTP sender is configured (`--smtp-url`): `send_email` needs one.
    pub smtp: bool,
    /// The store's time zone, written into a schedule trigger.
    pub timezone: String,
}

fn node_problem(id: &str, message: impl Into<String>) -> Problem {
    Problem {
        node_id: Some(id.to_owned()),
        edge: None,
        message: message.into(),
    }
}

fn edge_problem(i: usize, message: impl Into<String>) -> Problem {
    Problem {
        node_id: None,
        edge: Some(i),
        message: message.into(),
    }
}

fn problem(message: impl Into<String>) -> Problem {
    Problem {
        node_id: None,
        edge: None,
        message: message.into(),
    }
}

/// 422 `workflow_invalid` with `details.problems`.
pub fn invalid(problems: &[Problem]) -> AppError {
    let n = problems.len();
    AppError::new(
        ErrorCode::WorkflowInvalid,
        format!(
            "the workflow has {n} problem{}",
            if n == 1 { "" } else { "s" }
        ),
    )
    .with_details(serde_json::json!({ "problems": problems }))
}

/// Checks a draft; Ok carries its trigger, typed, with the store's time zone set.
pub fn check(graph: &Graph, trigger: &Value, ctx: &Context) -> Result<Trigger, AppError> {
    let mut problems = check_graph(graph, ctx);
    let trigger = check_trigger(trigger, ctx, &mut problems);
    match trigger {
        Some(t) if problems.is_empty() => Ok(t),
        _ => Err(invalid(&problems)),
    }
}

fn text_ok(v: &str, max: usize) -> bool {
    let n = v.trim().chars().count();
    n >= 1 && n <= max
}

fn check_predicate(p: &Predicate, what: &str) -> Vec<String> {
    let mut out = Vec::new();
    let field_ok = text_ok(&p.field, 200)
        && p.field
            .split('.')
            .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if !field_ok {
        out.push(format!(
            "{what}field must be a dotted path such as order.total_cents"
        ));
    }
    match (p.op.wants(), &p.value) {
        (Wants::Nothing, _) => {}
        (_, None) => out.push(format!("{what}value is required with op {:?}", p.op)),
        (Wants::Number, Some(v)) if !v.is_number() => {
            out.push(format!("{what}value must be a number with op {:?}", p.op));
        }
        _ => {}
    }
    out
}

fn check_step(step: &Step, ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    match step {
        Step::Wait(w) => match (w.seconds, &w.until) {
            (Some(s), None) if !(1..=MAX_WAIT_SECONDS).contains(&s) => {
                out.push("config.seconds must be 1 to 31536000 (365 days)".into());
            }
            (None, Some(u)) if crate::time::parse(u).is_none() => {
                out.push("config.until must be an RFC 3339 time".into());
            }
            (Some(_), None) | (None, Some(_)) => {}
            _ => out.push("config needs exactly one of seconds or until".into()),
        },
        Step::Condition(p) => out.extend(check_predicate(p, "config.")),
        Step::SendMessage(m) => {
            let t = &m.template;
            if !(text_ok(t, 512)
                && t.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            {
                out.push("config.template must be a template name: 1 to 512 of a-z, 0-9, _".into());
            }
            if let Some(l) = &m.language {
                let (lang, region) = l.split_once('_').unwrap_or((l, ""));
                let lang_ok =
                    (2..=3).contains(&lang.len()) && lang.chars().all(|c| c.is_ascii_lowercase());
                let region_ok = region.is_empty()
                    || (region.len() == 2 && region.chars().all(|c| c.is_ascii_uppercase()));
                if !(lang_ok && region_ok) {
                    out.push("config.language must be a language code such as pt_BR".into());
                }
            }
            if m.parameters.len() > 10 || m.parameters.iter().any(|p| !text_ok(p, 1024)) {
                out.push("config.parameters: at most 10, each 1 to 1024 characters".into());
            }
        }
        Step::SendEmail(e) => {
            if !ctx.smtp {
                out.push(
                    "e-mail sending is not available: the server has no SMTP sender (--smtp-url)"
                        .into(),
                );
            }
            if !text_ok(&e.subject, 255) {
                out.push("config.subject must be 1 to 255 characters".into());
            }
            if !text_ok(&e.body, 20_000) {
                out.push("config.body must be 1 to 20000 characters".into());
            }
        }
        Step::TagCustomer(t) => {
            if let Err(m) = crate::customers::model::tag(&t.tag) {
                out.push(format!("config.tag {m}"));
            }
        }
        Step::Webhook | Step::End => {}
    }
    out
}

#[expect(
    clippy::too_many_lines,
    reason = "one pass per rule, in the order the problems are listed"
)]
fn check_graph(g: &Graph, ctx: &Context) -> Vec<Problem> {
    let mut problems = Vec::new();
    if g.nodes.is_empty() {
        problems.push(problem("the graph needs at least one node"));
        return problems;
    }
    if g.nodes.len() > MAX_NODES {
        problems.push(problem(format!("at most {MAX_NODES} nodes")));
        return problems;
    }
    if g.edges.len() > MAX_EDGES {
        problems.push(problem(format!("at most {MAX_EDGES} edges")));
        return problems;
    }
    // Nodes: ids, types, configs.
    let mut seen = HashSet::new();
    let mut steps: HashMap<&str, Step> = HashMap::new();
    for n in &g.nodes {
        if !text_ok(&n.id, 64) {
            problems.push(node_problem(&n.id, "a node id is 1 to 64 characters"));
        }
        if !seen.insert(n.id.as_str()) {
            problems.push(node_problem(&n.id, "duplicate node id"));
            continue;
        }
        match n.step() {
            Ok(step) => {
                for m in check_step(&step, ctx) {
                    problems.push(node_problem(&n.id, m));
                }
                steps.insert(&n.id, step);
            }
            Err(m) => problems.push(node_problem(&n.id, m)),
        }
    }
    // Edges: both ends exist; branches only out of conditions.
    let mut good_edges = Vec::new();
    for (i, e) in g.edges.iter().enumerate() {
        let mut ok = true;
        for end in [&e.from, &e.to] {
            if !seen.contains(end.as_str()) {
                problems.push(edge_problem(i, format!("edge to a missing node {end:?}")));
                ok = false;
            }
        }
        let from_condition = matches!(steps.get(e.from.as_str()), Some(Step::Condition(_)));
        match (&e.branch, from_condition) {
            (Some(b), true) if b != "true" && b != "false" => {
                problems.push(edge_problem(i, "branch must be true or false"));
            }
            (None, true) => {
                problems.push(edge_problem(
                    i,
                    "an edge out of a condition needs a branch (true or false)",
                ));
            }
            // (a node whose config did not parse gets no second complaint about its edges)
            (Some(_), false) if steps.contains_key(e.from.as_str()) => {
                problems.push(edge_problem(
                    i,
                    "only edges out of a condition have a branch",
                ));
            }
            _ => {}
        }
        if ok {
            good_edges.push(e);
        }
    }
    // Out-degree: a condition has its two branches, `end` nothing, any other step one.
    for n in &g.nodes {
        let Some(step) = steps.get(n.id.as_str()) else {
            continue;
        };
        let out: Vec<_> = good_edges.iter().filter(|e| e.from == n.id).collect();
        match step {
            Step::Condition(_) => {
                for b in ["true", "false"] {
                    match out
                        .iter()
                        .filter(|e| e.branch.as_deref() == Some(b))
                        .count()
                    {
                        0 => problems.push(node_problem(
                            &n.id,
                            format!("a condition needs both branches: the {b} branch is missing"),
                        )),
                        1 => {}
                        _ => {
                            problems.push(node_problem(&n.id, format!("more than one {b} branch")));
                        }
                    }
                }
            }
            Step::End if !out.is_empty() => {
                problems.push(node_problem(&n.id, "an end node has no edges out"));
            }
            _ if out.len() > 1 => {
                problems.push(node_problem(
                    &n.id,
                    "only a condition may have more than one edge out",
                ));
            }
            _ => {}
        }
    }
    // The start: exactly one node with no edge in.
    let mut start_seen = HashSet::new();
    let starts: Vec<&str> = g
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .filter(|id| !good_edges.iter().any(|e| e.to == *id) && start_seen.insert(*id))
        .collect();
    match starts.as_slice() {
        [start] => {
            // Reachability from the start.
            let mut reached: HashSet<&str> = HashSet::from([*start]);
            let mut todo = vec![*start];
            while let Some(at) = todo.pop() {
                for e in good_edges.iter().filter(|e| e.from == at) {
                    if reached.insert(e.to.as_str()) {
                        todo.push(e.to.as_str());
                    }
                }
            }
            let mut unreachable = HashSet::new();
            for n in &g.nodes {
                if !reached.contains(n.id.as_str()) && unreachable.insert(n.id.as_str()) {
                    problems.push(node_problem(
                        &n.id,
                        format!("unreachable from the start node {start:?}"),
                    ));
                }
            }
        }
        [] => problems.push(problem(
            "no start node: every node has an edge in (exactly one node must have none)",
        )),
        many => problems.push(problem(format!(
            "more than one start node ({}): exactly one node may have no edge in",
            many.join(", ")
        ))),
    }
    // Cycles without a wait: a cycle among the nodes that are not waits.
    let not_wait = |id: &str| !matches!(steps.get(id), Some(Step::Wait(_)));
    let sub: Vec<(&str, &str)> = good_edges
        .iter()
        .filter(|e| not_wait(&e.from) && not_wait(&e.to))
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    for cycle in cycles(&sub) {
        problems.push(node_problem(
            cycle[0],
            format!("a cycle without a wait: {}", cycle.join(" -> ")),
        ));
    }
    // A wait on a loop paces it: `until` would be past after the first turn, and a short
    // wait would send a message every few seconds for as long as the run lasts.
    let all: Vec<(&str, &str)> = good_edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    for id in cycles(&all).into_iter().flatten() {
        if let Some(Step::Wait(w)) = steps.get(id)
            && w.seconds.is_none_or(|s| s < MIN_LOOP_WAIT_SECONDS)
        {
            problems.push(node_problem(
                id,
                format!(
                    "a wait on a loop needs config.seconds of at least {MIN_LOOP_WAIT_SECONDS} \
                     (an hour)"
                ),
            ));
        }
    }
    problems
}

/// The strongly connected components of `edges` that hold a cycle (more than one node, or a
/// node with an edge to itself), each sorted, in order of their first node (Kosaraju).
fn cycles<'a>(edges: &[(&'a str, &'a str)]) -> Vec<Vec<&'a str>> {
    let mut nodes: Vec<&str> = edges.iter().flat_map(|(a, b)| [*a, *b]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let out = |n: &'a str| -> Vec<&'a str> {
        edges
            .iter()
            .filter(|(a, _)| *a == n)
            .map(|(_, b)| *b)
            .collect()
    };
    // First pass: finishing order, iteratively.
    let mut done = HashSet::new();
    let mut order = Vec::new();
    for &root in &nodes {
        if done.contains(root) {
            continue;
        }
        done.insert(root);
        let mut stack = vec![(root, out(root))];
        while let Some((n, next)) = stack.last_mut() {
            if let Some(m) = next.pop() {
                if done.insert(m) {
                    stack.push((m, out(m)));
                }
            } else {
                order.push(*n);
                stack.pop();
            }
        }
    }
    // Second pass on the reversed graph, in reverse finishing order.
    let mut assigned = HashSet::new();
    let mut found = Vec::new();
    for &root in order.iter().rev() {
        if !assigned.insert(root) {
            continue;
        }
        let mut comp = vec![root];
        let mut todo = vec![root];
        while let Some(n) = todo.pop() {
            for (a, _) in edges.iter().filter(|(_, b)| *b == n) {
                if assigned.insert(a) {
                    comp.push(a);
                    todo.push(a);
                }
            }
        }
        let self_loop = comp.len() == 1 && edges.iter().any(|(a, b)| a == b && *a == root);
        if comp.len() > 1 || self_loop {
            comp.sort_unstable();
            found.push(comp);
        }
    }
    found.sort();
    found
}

fn check_trigger(v: &Value, ctx: &Context, problems: &mut Vec<Problem>) -> Option<Trigger> {
    let t: Trigger = match crate::json::from_value(v) {
        Ok(t) => t,
        Err(e) => {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(".{path}")
            };
            problems.push(problem(format!("trigger{at}: {}", e.inner())));
            return None;
        }
    };
    let before = problems.len();
    let t = match t {
        Trigger::Manual => Trigger::Manual,
        Trigger::Schedule {
            cron,
            every_seconds,
            timezone: _,
        } => {
            match (&cron, every_seconds) {
                (Some(c), None) => {
                    if let Err(e) = parse_cron(c) {
                        problems.push(problem(format!("trigger.cron: {e}")));
                    }
                }
                (None, Some(s)) if !(MIN_EVERY_SECONDS..=MAX_WAIT_SECONDS).contains(&s) => {
                    problems.push(problem(format!(
                        "trigger.every_seconds must be {MIN_EVERY_SECONDS} to {MAX_WAIT_SECONDS}"
                    )));
                }
                (None, Some(_)) => {}
                _ => problems.push(problem(
                    "a schedule trigger needs exactly one of cron or every_seconds",
                )),
            }
            Trigger::Schedule {
                cron: cron.map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")),
                every_seconds,
                timezone: Some(ctx.timezone.clone()),
            }
        }
        Trigger::Event { event, filter } => {
            if store_event(&event).is_none() {
                problems.push(problem(format!(
                    "trigger.event: {event:?} is not a store event of the webhook catalog"
                )));
            }
            if let Some(f) = &filter {
                for m in check_predicate(f, "trigger.filter.") {
                    problems.push(problem(m));
                }
            }
            Trigger::Event { event, filter }
        }
    };
    (problems.len() == before).then_some(t)
}

/// The catalog event a trigger may name: a store event, not a platform one, nor the ones
/// that workflows or tests emit themselves (a workflow started by `workflow.step` loops).
pub fn store_event(name: &str) -> Option<Event> {
    Event::from_name(name)
        .filter(|e| !e.is_platform() && !matches!(e, Event::WorkflowStep | Event::WebhookTest))
}

/// A 5-field cron (minute hour day-of-month month day-of-week), no seconds, no years.
pub fn parse_cron(expr: &str) -> Result<croner::Cron, String> {
    if expr.split_whitespace().count() != 5 {
        return Err("must have 5 fields: minute hour day-of-month month day-of-week".into());
    }
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(expr)
        .map_err(|e| e.to_string())
}

/// When a published trigger fires next after `now`: None for triggers that are not a
/// schedule. A cron is read on the wall clock of the trigger's `timezone` (the store's; UTC
/// when it names no zone), so `0 9 * * 1` is 9 o'clock there, summer time or not.
pub fn next_fire(t: &Trigger, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match t {
        Trigger::Schedule {
            every_seconds: Some(s),
            ..
        } => Some(now + Duration::seconds(*s)),
        Trigger::Schedule {
            cron: Some(c),
            timezone,
            ..
        } => {
            let tz: chrono_tz::Tz = timezone
                .as_deref()
                .and_then(|z| z.parse().ok())
                .unwrap_or(chrono_tz::UTC);
            let next = parse_cron(c)
                .ok()?
                .find_next_occurrence(&now.with_timezone(&tz), false)
                .ok()?;
            Some(next.with_timezone(&Utc))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::cycles;

    #[test]
    fn cycles_are_the_components_that_loop() {
        assert!(cycles(&[("a", "b"), ("b", "c")]).is_empty());
        assert_eq!(cycles(&[("a", "a")]), vec![vec!["a"]]);
        assert_eq!(
            cycles(&[
                ("s", "a"),
                ("a", "b"),
                ("b", "a"),
                ("b", "c"),
                ("c", "d"),
                ("d", "c")
            ]),
            vec![vec!["a", "b"], vec!["c", "d"]]
        );
    }
}
