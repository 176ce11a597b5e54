//! The MCP tools: names, descriptions, strict input schemas, output schemas (what each tool's
//! `structuredContent` holds) and annotations, and the typed arguments each call is parsed into (unknown fields are refused, so a typo is an error, not a
//! silently ignored option).
//!
//! Descriptions are short on purpose: an agent pays for `tools/list` in every session. The test
//! `mcp::tools_list_stays_small` holds the whole response under 8 000 bytes (about 2 000 tokens).

use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

const FACT_TYPES: [&str; 7] =
    ["constraint", "architecture", "pattern", "review", "decision", "known-unknown", "failure"];

/// The longest string an argument may be unless its schema says otherwise (a line), and the
/// most items an array may hold.
const MAX_STRING: usize = crate_limits::LINE;
const MAX_ITEMS: usize = 64;

mod crate_limits {
    use git_neo::record::validate;
    pub const LINE: usize = validate::MAX_LINE_CHARS;
    pub const TEXT: usize = validate::MAX_TEXT_BYTES;
    pub const BODY: usize = validate::MAX_BODY_BYTES;
}

/// Give every string a `maxLength` and every array a `maxItems` (and its strings a
/// `maxLength`) that the schema does not set itself: every argument is bounded, and
/// [`check`] refuses what the schema refuses, naming the field.
fn bound(property: &mut Value) {
    let Some(p) = property.as_object_mut() else { return };
    match p.get("type").and_then(Value::as_str) {
        Some("string") => {
            p.entry("maxLength").or_insert(json!(MAX_STRING));
        }
        Some("array") => {
            p.entry("maxItems").or_insert(json!(MAX_ITEMS));
            if let Some(items) = p.get_mut("items") {
                bound(items);
            }
        }
        _ => {}
    }
}

fn schema(mut properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    if let Some(props) = properties.as_object_mut() {
        props.values_mut().for_each(bound);
    }
    let v = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// An output schema: an object with these typed properties, the `required` ones always present
/// (others appear when they apply; fields not named here may be added in later versions).
fn output(properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    match json!({"type": "object", "properties": properties, "required": required}) {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn records() -> Value {
    json!({"type": "array", "items": {"required": ["id"]}})
}

/// What every write answers (`add_fact`, `record_attempt`, `mark_outdated`, `confirm`, `forget`).
fn written() -> Arc<Map<String, Value>> {
    output(
        json!({"id": {"type": "string"}, "path": {"type": "string"}, "deduplicated": {"type": "boolean"}}),
        &["id", "path", "deduplicated"],
    )
}

fn id() -> Value {
    json!({"type": "string", "description": "id or a unique prefix"})
}

fn dry_run() -> Value {
    json!({"type": "boolean"})
}

fn ids() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

fn additive() -> ToolAnnotations {
    ToolAnnotations::new().read_only(false).destructive(false).open_world(false)
}

/// Every tool the server offers, in the order `tools/list` gives them.
pub fn all() -> Vec<Tool> {
    use crate_limits::{BODY, TEXT};
    vec![
        Tool::new(
            "recall",
            "What memory knows for a task: constraints (always), relevant facts, earlier attempts, facts no \
             longer true (with replacements), patterns. Call first, with the task.",
            schema(
                json!({
                    "query": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "relevant facts, default 10"},
                    "budget": {"type": "integer", "minimum": 200, "maximum": 50000, "description": "tokens, default 4000"},
                    "types": {"type": "array", "items": {"enum": FACT_TYPES}},
                    "scope": {"type": "string", "description": "only this scope (default: all)"},
                    "all_sessions": {"type": "boolean"},
                    "area": {"type": "string"},
                    "as_of": {"type": "string", "description": "YYYY-MM-DD, time or commit: memory then"}
                }),
                &["query"],
            ),
        )
        .annotate(read_only())
        .with_raw_output_schema(output(
            json!({
                "query": {"type": "string"}, "semantic": {"type": "boolean"},
                "constraints": records(), "facts": records(), "attempts": records(), "invalidated": records()
            }),
            &["query", "semantic", "constraints", "facts", "attempts", "invalidated", "tokens"],
        )),
        Tool::new(
            "add_fact",
            "Store a lesson as a typed fact. A fact with the same key or slot, a near-identical one, or one it \
             surely updates is replaced (the reply says why); for one in `possible_updates`, call again with \
             `supersedes: [id]`.",
            schema(
                json!({
                    "type": {"enum": FACT_TYPES},
                    "subject": {"type": "string", "minLength": 1, "description": "one line"},
                    "body": {"type": "string", "maxLength": BODY},
                    "scope": {"type": "string", "description": "project (default), user, org or session:<name>"},
                    "area": {"type": "string", "description": "free-form part of the project"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "key": {"type": "string", "description": "stable name of what it is about, e.g. db.engine"},
                    "slot": {"type": "string", "description": "\"subject / predicate\"; becomes the key"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "supersedes": ids(),
                    "depends_on": ids(),
                    "extends": ids(),
                    "derives_from": ids(),
                    "sources": {"type": "array", "items": {"type": "string"}, "description": "cited sections: PATH#heading"},
                    "valid_from": {"type": "string"},
                    "valid_to": {"type": "string"},
                    "suggestion": {"type": "string", "maxLength": TEXT, "description": "code it recommends"},
                    "dry_run": dry_run()
                }),
                &["type", "subject"],
            ),
        )
        .annotate(additive().idempotent(true))
        .with_raw_output_schema(written()),
        Tool::new(
            "record_attempt",
            "Record what you tried on a task: action, observation, inference, files touched, and the check you \
             ran with its result (git-neo reads the commit and file state).",
            schema(
                json!({
                    "task": {"type": "string", "minLength": 1},
                    "action": {"type": "string", "minLength": 1},
                    "observation": {"type": "string", "minLength": 1, "maxLength": TEXT},
                    "inference": {"type": "string", "maxLength": TEXT},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "check_command": {"type": "string"},
                    "check_result": {"enum": ["passed", "failed"]},
                    "scope": {"type": "string", "description": "project (default), user, org or session:<name>"},
                    "area": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "suggestion": {"type": "string", "maxLength": TEXT, "description": "code it proposes"}
                }),
                &["task", "action", "observation"],
            ),
        )
        .annotate(additive())
        .with_raw_output_schema(written()),
        Tool::new(
            "mark_outdated",
            "Mark a fact or attempt as no longer true, with why. It stays in history.",
            schema(json!({"id": id(), "reason": {"type": "string", "minLength": 1}, "dry_run": dry_run()}), &["id", "reason"]),
        )
        .annotate(additive())
        .with_raw_output_schema(written()),
        Tool::new(
            "confirm",
            "A fact checked against the code at HEAD: clears its review flags, re-anchors it (default: where its code is now).",
            schema(
                json!({"id": id(), "anchors": {"type": "array", "items": {"type": "string"}, "description": "PATH[:START-END]"}, "reason": {"type": "string"}, "dry_run": dry_run()}),
                &["id"],
            ),
        )
        .annotate(additive())
        .with_raw_output_schema(written()),
        Tool::new(
            "forget",
            "Hide a wrong or harmful record (a retraction; git neo revert undoes it).",
            schema(json!({"id": id(), "reason": {"type": "string", "minLength": 1}, "dry_run": dry_run()}), &["id", "reason"]),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true).open_world(false))
        .with_raw_output_schema(written()),
        Tool::new(
            "show",
            "A record's full text and state: status, confidence, what replaced it, review flags.",
            schema(json!({"id": id()}), &["id"]),
        )
        .annotate(read_only())
        .with_raw_output_schema(output(
            json!({
                "id": {"type": "string"}, "path": {"type": "string"}, "text": {"type": "string"},
                "status": {"type": "string"}, "record": {"type": "object"}
            }),
            &["id", "path", "text", "status", "record"],
        )),
        Tool::new(
            "task_history",
            "Every attempt at a task, oldest first, with check results and whether each check still applies.",
            schema(
                json!({"task": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1, "maximum": 200}}),
                &["task"],
            ),
        )
        .annotate(read_only())
        .with_raw_output_schema(output(
            json!({
                "task": {"type": "string"}, "total": {"type": "integer"}, "shown": {"type": "integer"},
                "attempts": records()
            }),
            &["task", "total", "shown", "attempts"],
        )),
        Tool::new(
            "construct_search",
            "Search curated patterns for working with git and agents (bisecting, reversible migrations, ...).",
            schema(
                json!({"query": {"type": "string", "minLength": 1}, "k": {"type": "integer", "minimum": 1, "maximum": 20}}),
                &["query"],
            ),
        )
        .annotate(read_only())
        .with_raw_output_schema(output(
            json!({"hits": {"type": "array", "items": {"required": ["name", "title", "score"]}}}),
            &["hits"],
        )),
        Tool::new(
            "refresh",
            "Take in what changed in memory since this session started (recall says `stale`).",
            schema(json!({}), &[]),
        )
        .annotate(read_only())
        .with_raw_output_schema(output(json!({"since": {"type": "string"}, "taken_in": {"type": "object"}}), &["since"])),
        Tool::new(
            "lessons",
            "Lessons as patches to AGENTS.md or a skill: list; propose (appends `text`, or a record's, `from`); \
             apply (writes the file; review first).",
            schema(
                json!({
                    "action": {"enum": ["list", "propose", "apply"]},
                    "file": {"type": "string", "description": "default AGENTS.md"},
                    "text": {"type": "string"},
                    "from": id(),
                    "id": id(),
                    "dry_run": dry_run()
                }),
                &["action"],
            ),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).open_world(false))
        .with_raw_output_schema(output(
            json!({"action": {"enum": ["listed", "proposed", "applied"]}, "lessons": records(), "id": {"type": "string"}}),
            &["action"],
        )),
    ]
}

/// Check a call's arguments against the bounds in its tool's schema (lengths, ranges, item
/// counts), before they are parsed: a refused value is named with its field and the bound.
pub fn check(tool: &str, args: &Map<String, Value>) -> Result<(), String> {
    static TOOLS: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
    let tools = TOOLS.get_or_init(all);
    let Some(t) = tools.iter().find(|t| t.name == tool) else { return Ok(()) };
    let Some(props) = t.input_schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (name, value) in args {
        if let Some(schema) = props.get(name) {
            check_value(name, schema, value)?;
        }
    }
    Ok(())
}

fn check_value(field: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let limit = |k: &str| schema.get(k).and_then(Value::as_f64);
    match value {
        Value::String(s) => {
            let n = s.chars().count();
            if let Some(max) = limit("maxLength").filter(|m| n as f64 > *m) {
                return Err(format!("{field}: {n} characters is longer than the most this tool takes, {max}"));
            }
            if let Some(min) = limit("minLength").filter(|m| (n as f64) < *m) {
                return Err(format!("{field}: must be at least {min} character long"));
            }
        }
        Value::Number(x) => {
            let x = x.as_f64().unwrap_or(f64::NAN);
            if let Some(max) = limit("maximum").filter(|m| x > *m) {
                return Err(format!("{field}: {x} is above the maximum, {max}"));
            }
            if let Some(min) = limit("minimum").filter(|m| x < *m) {
                return Err(format!("{field}: {x} is below the minimum, {min}"));
            }
        }
        Value::Array(items) => {
            if let Some(max) = limit("maxItems").filter(|m| items.len() as f64 > *m) {
                return Err(format!("{field}: {} items are more than the most this tool takes, {max}", items.len()));
            }
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check_value(&format!("{field}[{i}]"), item, v)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonsArgs {
    pub action: String,
    pub file: Option<String>,
    pub text: Option<String>,
    pub from: Option<String>,
    pub id: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    pub query: String,
    pub k: Option<usize>,
    pub budget: Option<usize>,
    #[serde(default)]
    pub types: Vec<String>,
    pub scope: Option<String>,
    #[serde(default)]
    pub all_sessions: bool,
    pub area: Option<String>,
    pub as_of: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddFactArgs {
    #[serde(rename = "type")]
    pub fact_type: String,
    #[serde(default)]
    pub dry_run: bool,
    pub subject: String,
    #[serde(default)]
    pub body: String,
    pub scope: Option<String>,
    pub area: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub key: Option<String>,
    pub slot: Option<String>,
    pub confidence: Option<f64>,
    #[serde(default)]
    pub supersedes: Vec<String>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub extends: Vec<String>,
    #[serde(default)]
    pub derives_from: Vec<String>,
    #[serde(default)]
    pub sources: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    pub suggestion: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptArgs {
    pub task: String,
    pub action: String,
    pub observation: String,
    pub inference: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    pub check_command: Option<String>,
    pub check_result: Option<String>,
    pub scope: Option<String>,
    pub area: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub suggestion: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdReasonArgs {
    pub id: String,
    pub reason: String,
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmArgs {
    pub id: String,
    #[serde(default)]
    pub anchors: Vec<String>,
    pub reason: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    pub id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    pub task: String,
    pub limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstructArgs {
    pub query: String,
    pub k: Option<usize>,
}
