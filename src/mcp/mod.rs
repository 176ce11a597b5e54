//! `git neo mcp`: the MCP server over stdio (rmcp), a thin layer over the same library the CLI
//! uses. Like the CLI, it owns its I/O: the protocol on stdin/stdout, nothing else printed.
//!
//! What stays warm across calls: the folded memory (reloaded only when a ref tip moved, for
//! example after a write by another process), the embedding model (loaded once), the recall
//! indexes (caught up incrementally when the tips move) and the Construct library with its
//! pattern vectors. Every call is validated first (unknown or mistyped arguments are a tool error)
//! and writes nothing when invalid. Every tool answers with `structuredContent` matching the
//! `outputSchema` it lists (recall adds the markdown an agent reads as its text); each part of a
//! reply is bounded to [`MAX_OUTPUT`] bytes and says when it was cut.

pub mod http;
pub mod tools;
// The stdio transport writes the protocol's lines to stdout: an edge it owns (clippy.toml).
#[allow(clippy::disallowed_methods)]
pub mod transport;

use git_neo::api::{AddRequest, RecallQuery, Session};
use git_neo::api::{AttemptRequest, CheckSpec};
use git_neo::Error;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use std::sync::{Arc, Mutex};

/// The most a reply carries, in bytes.
pub const MAX_OUTPUT: usize = 16_000;

/// How an MCP client takes in what changed under its live session (said in every `stale`).
const REFRESH_HINT: &str = "Call the refresh tool to take it in.";

/// Recall's token budget when the caller gives none (smaller than the CLI's: it lands in a context).
pub const DEFAULT_BUDGET: usize = 4_000;

/// The session (memory, model, indexes, Construct) kept warm between calls.
struct Kept {
    session: Session,
    /// Starts a fetch of a stale org cache in the background (the CLI's; this server spawns nothing).
    fetch_org: FetchOrg,
}

/// What the server calls, with the work tree, when a read found the org cache stale.
pub type FetchOrg = fn(&std::path::Path);

/// The server: one warm state behind a lock (calls are handled one at a time), and this client
/// session's live view of memory (`recall::pin`): over HTTP each client session gets its own
/// handle ([`NeoServer::for_client`]), all of them reading one warm memory.
#[derive(Clone)]
pub struct NeoServer {
    warm: Arc<Mutex<Kept>>,
    live: Arc<Mutex<Option<git_neo::api::LivePin>>>,
}

/// What a tool answers: its structured content (an object matching the tool's `outputSchema`)
/// and, for recall, the markdown an agent reads; every other tool's text is its structured content
/// serialised, as the MCP revision asks of a tool with an output schema.
struct Reply {
    structured: serde_json::Value,
    text: Option<String>,
}

impl Reply {
    fn of(v: &impl serde::Serialize) -> Result<Reply, String> {
        let structured = serde_json::to_value(v).map_err(|e| format!("error: cannot encode the reply: {e}"))?;
        Ok(Reply { structured, text: None })
    }
}

type ToolResult = Result<Reply, String>;

fn bounded(mut s: String) -> String {
    if s.len() <= MAX_OUTPUT {
        return s;
    }
    let mut cut = MAX_OUTPUT;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let rest = s.len() - cut;
    s.truncate(cut);
    s.push_str(&format!("\n[cut: {rest} more bytes not shown; narrow the query or lower k, budget or limit]"));
    s
}

fn args<T: DeserializeOwned>(tool: &str, raw: Option<serde_json::Map<String, serde_json::Value>>) -> Result<T, String> {
    let raw = raw.unwrap_or_default();
    tools::check(tool, &raw).map_err(|e| format!("invalid arguments for {tool}: {e}"))?;
    serde_json::from_value(serde_json::Value::Object(raw))
        .map_err(|e| format!("invalid arguments for {tool}: {e}; see the tool's input schema"))
}

/// An error as an MCP client reads it: what went wrong, without the command line's advice
/// (`git neo …`, `--yes`), which names verbs this front end does not have.
fn err(e: Error) -> String {
    format!("error: {}", e.plain())
}

fn json(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("error: cannot encode the reply: {e}"))
}

/// The length of `v` as `serde_json::to_string_pretty` writes it (the larger form, which a
/// reply without a text of its own shows), at nesting `depth`, counted from the value rather than
/// written: a recall's reply was measured by writing it, several times as it was cut, and that
/// was a tenth of a warm recall's time.
fn pretty_len(v: &serde_json::Value, depth: usize) -> usize {
    use serde_json::Value;
    // Each item on a line of its own, indented two spaces a level; the closing bracket on a line
    // of its own at the enclosing level. Empty containers stay `[]` and `{}`.
    let lines = |items: usize| if items == 0 { 2 } else { 2 + items * (2 + 2 * (depth + 1)) + 2 * depth };
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => string_len(s),
        Value::Array(a) => lines(a.len()) + a.iter().map(|x| pretty_len(x, depth + 1)).sum::<usize>(),
        Value::Object(o) => {
            lines(o.len()) + o.iter().map(|(k, x)| string_len(k) + 2 + pretty_len(x, depth + 1)).sum::<usize>()
        }
    }
}

/// The length of `s` as a JSON string: its quotes, and serde_json's escapes (two bytes for a
/// quote, a backslash and the five named controls, six for any other control byte; the rest is
/// written as it is).
fn string_len(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// Bound structured content to [`MAX_OUTPUT`] bytes as serialised, keeping it valid JSON of the
/// same shape: the longest strings are cut (each saying how much it lost), then, if that is not
/// enough, the longest arrays lose their last items.
fn fit(mut v: serde_json::Value) -> serde_json::Value {
    fn size(v: &serde_json::Value) -> usize {
        pretty_len(v, 0)
    }
    fn longest_string(v: &mut serde_json::Value) -> Option<&mut String> {
        match v {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Array(a) => a.iter_mut().filter_map(longest_string).max_by_key(|s| s.len()),
            serde_json::Value::Object(o) => o.values_mut().filter_map(longest_string).max_by_key(|s| s.len()),
            _ => None,
        }
    }
    fn longest_array(v: &mut serde_json::Value) -> Option<&mut Vec<serde_json::Value>> {
        let own_len = |v: &serde_json::Value| v.as_array().map_or(0, Vec::len);
        match v {
            serde_json::Value::Array(a) => {
                if a.iter().all(|x| own_len(x) <= a.len()) {
                    Some(a)
                } else {
                    a.iter_mut().filter_map(longest_array).max_by_key(|a| a.len())
                }
            }
            serde_json::Value::Object(o) => o.values_mut().filter_map(longest_array).max_by_key(|a| a.len()),
            _ => None,
        }
    }
    for _ in 0..32 {
        let over = size(&v).saturating_sub(MAX_OUTPUT);
        if over == 0 {
            return v;
        }
        let Some(s) = longest_string(&mut v).filter(|s| s.len() > 200) else { break };
        let mut keep = s.len().saturating_sub(over + 120).max(s.len() / 4);
        while !s.is_char_boundary(keep) {
            keep -= 1;
        }
        let rest = s.len() - keep;
        s.truncate(keep);
        s.push_str(&format!("\n[cut: {rest} more bytes not shown; narrow the query or lower k, budget or limit]"));
    }
    // Items leave in runs, the whole measured again only once per run (a pass per item cost a
    // recall at 10k facts milliseconds). An item is counted at twice its size on its own, more
    // than it takes in place (where it is only indented deeper): a run never takes an item the
    // bound did not need, and each run covers at least half of what is left over.
    let mut total = size(&v);
    while total > MAX_OUTPUT {
        let over = total - MAX_OUTPUT;
        match longest_array(&mut v) {
            Some(a) if !a.is_empty() => {
                let mut freed = 0;
                while freed < over {
                    match a.pop() {
                        Some(item) => freed += 2 * size(&item),
                        None => break,
                    }
                }
            }
            _ => break,
        }
        total = size(&v);
    }
    v
}

impl Kept {
    /// Run `f` on the scope a call names (the session goes back to the project afterwards).
    fn in_scope<T>(
        &mut self,
        scope: Option<&str>,
        f: impl FnOnce(&mut Session) -> Result<T, Error>,
    ) -> Result<T, String> {
        let scope = match scope {
            Some(s) => Some(self.session.places().parse(s).map_err(err)?),
            None => None,
        };
        self.session.set_scope(scope);
        let result = f(&mut self.session);
        self.session.set_scope(None);
        result.map_err(err)
    }

    fn recall(&mut self, a: tools::RecallArgs) -> ToolResult {
        let query = RecallQuery {
            query: a.query,
            k: a.k.unwrap_or(10).clamp(1, 50),
            budget: a.budget.unwrap_or(DEFAULT_BUDGET).clamp(200, 50_000),
            types: a.types,
            area: a.area,
            as_of: a.as_of,
            front: Some(git_neo::api::Front::Mcp),
            all_sessions: a.all_sessions,
        };
        // The tool's argument is `types`; the library names the field of one value `type`.
        let result =
            self.in_scope(a.scope.as_deref(), |s| s.recall(&query).map_err(|e| e.renamed_field("type", "types")))?;
        // Notices have no reader here; a stale org cache is still fetched for the next call.
        if self.session.take_notices().iter().any(|n| matches!(n, git_neo::api::Notice::OrgStale { fetch: true, .. })) {
            (self.fetch_org)(self.session.dir());
        }
        let mut result = result;
        if let Some(stale) = result.stale.as_mut() {
            stale.refresh = REFRESH_HINT.into();
        }
        let mut text = git_neo::recall::render::markdown(&result);
        if let Some(why) = self.session.semantic_off() {
            text.push_str(&format!("_(semantic recall off: {why})_\n"));
        }
        let structured = serde_json::to_value(&result).map_err(|e| format!("error: cannot encode the reply: {e}"))?;
        Ok(Reply { structured, text: Some(text) })
    }

    fn add_fact(&mut self, a: tools::AddFactArgs) -> ToolResult {
        let req = AddRequest {
            fact_type: a.fact_type,
            subject: a.subject,
            body: a.body,
            area: a.area,
            tags: a.tags,
            key: a.key,
            slot: a.slot,
            confidence: a.confidence,
            provenance: None,
            depends_on: a.depends_on,
            anchors: Vec::new(),
            valid_from: a.valid_from,
            valid_to: a.valid_to,
            supersedes: a.supersedes,
            extends: a.extends,
            derives_from: a.derives_from,
            no_supersede: false,
            reason: None,
            suggestion: a.suggestion,
            created_at: None,
            sources: a.sources,
        };
        Reply::of(&self.in_scope(a.scope.as_deref(), |s| s.dry_run(a.dry_run, |s| s.add(&req)))?)
    }

    fn record_attempt(&mut self, a: tools::AttemptArgs) -> ToolResult {
        let check = match (a.check_command, a.check_result) {
            (Some(command), Some(result)) => CheckSpec::Reported { command, result },
            (None, None) => CheckSpec::None,
            _ => return Err("error: check_command and check_result go together; give both or neither".into()),
        };
        let req = AttemptRequest {
            task: a.task,
            action: a.action,
            observation: a.observation,
            inference: a.inference,
            files: a.files,
            check,
            area: a.area,
            tags: a.tags,
            retry_of: None,
            suggestion: a.suggestion,
        };
        Reply::of(&self.in_scope(a.scope.as_deref(), |s| s.attempt(&req))?)
    }

    fn confirm(&mut self, a: tools::ConfirmArgs) -> ToolResult {
        Reply::of(&self.session.dry_run(a.dry_run, |s| s.confirm(&a.id, &a.anchors, a.reason.as_deref())).map_err(err)?)
    }

    fn mark_outdated(&mut self, a: tools::IdReasonArgs) -> ToolResult {
        Reply::of(&self.session.dry_run(a.dry_run, |s| s.outdated(&a.id, &a.reason)).map_err(err)?)
    }

    fn forget(&mut self, a: tools::IdReasonArgs) -> ToolResult {
        Reply::of(&self.session.dry_run(a.dry_run, |s| s.forget(&a.id, &a.reason)).map_err(err)?)
    }

    fn show(&mut self, a: tools::IdArgs) -> ToolResult {
        Reply::of(&self.session.show(&a.id).map_err(err)?)
    }

    fn task_history(&mut self, a: tools::TaskArgs) -> ToolResult {
        let history = self.session.task_history(&a.task).map_err(err)?;
        let total = history.len();
        let limit = a.limit.unwrap_or(20).clamp(1, 200);
        let shown: Vec<_> = history.into_iter().skip(total.saturating_sub(limit)).collect();
        let rows: Vec<serde_json::Value> = shown
            .iter()
            .map(|v| {
                let a = match &v.entry.record.payload {
                    git_neo::record::Payload::Attempt(a) => Some(a),
                    _ => None,
                };
                serde_json::json!({
                    "id": v.entry.id,
                    "at": v.entry.record.created_at,
                    "status": v.entry.status,
                    "action": a.map(|a| a.action.as_str()),
                    "observation": a.map(|a| a.observation.as_str()),
                    "inference": a.and_then(|a| a.inference.as_deref()),
                    "check": a.map(|a| serde_json::json!({
                        "result": a.check.result, "source": a.check.source, "command": a.check.command
                    })),
                    "freshness": v.freshness.to_string(),
                })
            })
            .collect();
        Reply::of(&serde_json::json!({ "task": a.task, "total": total, "shown": rows.len(), "attempts": rows }))
    }

    fn construct_search(&mut self, a: tools::ConstructArgs) -> ToolResult {
        let hits = self.session.construct_search(&a.query, a.k.unwrap_or(5).clamp(1, 20)).map_err(err)?;
        self.session.take_notices();
        // Structured content is an object: the hits under `hits`.
        Reply::of(&serde_json::json!({ "hits": hits }))
    }

    fn refresh(&mut self) -> ToolResult {
        Reply::of(&self.session.refresh_live().map_err(err)?)
    }

    fn lessons(&mut self, a: tools::LessonsArgs) -> ToolResult {
        use git_neo::api::{LessonEdit, LessonRequest};
        match a.action.as_str() {
            "list" => {
                Reply::of(&serde_json::json!({ "action": "listed", "lessons": self.session.lessons().map_err(err)? }))
            }
            "propose" => {
                let mut because = Vec::new();
                let text = match (a.text, a.from) {
                    (Some(t), None) => t,
                    (None, Some(from)) => {
                        let (t, id) = self.session.lesson_text_of(&from).map_err(err)?;
                        because.push(id);
                        t
                    }
                    _ => return Err("error: propose takes text or from (one of them)".into()),
                };
                let req = LessonRequest {
                    file: a.file.unwrap_or_else(|| "AGENTS.md".into()),
                    edit: LessonEdit::Append(text),
                    because,
                    reason: None,
                };
                let proposed = self.session.dry_run(a.dry_run, |s| s.propose_lesson(&req)).map_err(err)?;
                let mut reply = Reply::of(&proposed)?;
                if let Some(o) = reply.structured.as_object_mut() {
                    o.insert("action".into(), "proposed".into());
                }
                Ok(reply)
            }
            "apply" => {
                let id = a.id.ok_or("error: apply takes the lesson's id")?;
                Reply::of(&self.session.dry_run(a.dry_run, |s| s.apply_lesson(&id)).map_err(err)?)
            }
            other => Err(format!("error: action: {other:?} is not list, propose or apply")),
        }
    }

    fn call(&mut self, name: &str, raw: Option<serde_json::Map<String, serde_json::Value>>) -> Option<ToolResult> {
        Some(match name {
            "recall" => args(name, raw).and_then(|a| self.recall(a)),
            "add_fact" => args(name, raw).and_then(|a| self.add_fact(a)),
            "record_attempt" => args(name, raw).and_then(|a| self.record_attempt(a)),
            "mark_outdated" => args(name, raw).and_then(|a| self.mark_outdated(a)),
            "confirm" => args(name, raw).and_then(|a| self.confirm(a)),
            "forget" => args(name, raw).and_then(|a| self.forget(a)),
            "show" => args(name, raw).and_then(|a| self.show(a)),
            "task_history" => args(name, raw).and_then(|a| self.task_history(a)),
            "construct_search" => args(name, raw).and_then(|a| self.construct_search(a)),
            "refresh" => args::<tools::NoArgs>(name, raw).and_then(|_| self.refresh()),
            "lessons" => args(name, raw).and_then(|a| self.lessons(a)),
            _ => return None,
        })
    }
}

impl NeoServer {
    /// A server over `session`, its first client session started now.
    pub fn new(mut session: Session, fetch_org: FetchOrg) -> NeoServer {
        // Calls are answered one at a time: a repack inside `add_fact` would hold the caller and
        // every call queued behind it for seconds.
        session.set_maintenance(git_neo::api::Maintenance::Detached);
        // One short query per call is what its client waits for (`embed::Spin::WithinCall`).
        session.set_long_lived();
        // Recall's telemetry is appended after the answer, as the session settles.
        session.answer_first();
        let server = NeoServer { warm: Arc::new(Mutex::new(Kept { session, fetch_org })), live: Arc::default() };
        server.begin();
        server
    }

    /// A handle for a new client session: the same warm memory, its own live view, started now.
    pub fn for_client(&self) -> NeoServer {
        let client = NeoServer { warm: self.warm.clone(), live: Arc::default() };
        client.begin();
        client
    }

    /// Start this client session's live view (left for the first call if memory cannot be read
    /// yet).
    fn begin(&self) {
        let mut warm = self.warm.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        warm.session.put_live(None);
        if warm.session.begin_live().is_ok() {
            *self.live.lock().unwrap_or_else(|p| p.into_inner()) = warm.session.take_live();
        }
    }
}

impl ServerHandler for NeoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("git-neo", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "git-neo is this repository's memory. Call recall with the task before you start; record what \
                 you tried with record_attempt and what you learned with add_fact; mark_outdated what stopped \
                 being true.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut warm = self.warm.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // This client session's view goes in for the call and comes back out after it.
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        warm.session.put_live(live.take());
        if !warm.session.is_live() {
            let _ = warm.session.begin_live();
        }
        let mut result = warm.call(&request.name, request.arguments);
        // Every answer says when memory changed under this session (recall's carries it already;
        // `refresh` is what takes it in).
        if let Some(Ok(reply)) = result.as_mut().filter(|_| !matches!(request.name.as_ref(), "recall" | "refresh")) {
            if let (Ok(Some(mut stale)), Some(o)) = (warm.session.live_stale(), reply.structured.as_object_mut()) {
                stale.refresh = REFRESH_HINT.into();
                if let Ok(v) = serde_json::to_value(&stale) {
                    o.insert("stale".into(), v);
                }
            }
        }
        *live = warm.session.take_live();
        drop(live);
        let result = match result {
            Some(r) => r,
            None => {
                return Err(McpError::invalid_params(
                    format!("no tool named {:?}; tools/list names them", request.name),
                    None,
                ))
            }
        };
        Ok(match result {
            Ok(reply) => {
                let structured = fit(reply.structured);
                let text = reply.text.map_or_else(|| json(&structured), bounded);
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(structured);
                r
            }
            Err(text) => CallToolResult::error(vec![ContentBlock::text(bounded(text))]),
        }
        .into())
    }
}

/// The single-threaded runtime either transport serves on (calls are handled one at a time).
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Io { context: "starting the MCP server's runtime".into(), source: e })
}

/// Serve on stdin/stdout until the client closes the connection.
pub fn serve(session: Session, fetch_org: FetchOrg) -> Result<(), Error> {
    let io = |context: &str, e: std::io::Error| Error::Io { context: context.into(), source: e };
    runtime()?.block_on(async move {
        let server = NeoServer::new(session, fetch_org);
        // Between calls, once an answer is out: the indexes catch up to the call's own write (an
        // agent that notes something usually asks next), so the next recall does not wait for it.
        let warm = server.warm.clone();
        let settle: transport::AfterAnswer = Arc::new(move || {
            if let Ok(mut kept) = warm.try_lock() {
                kept.session.settle();
            }
        });
        let running = server
            .serve(transport::Stdio::new().after_answer(settle))
            .await
            .map_err(|e| io("starting the MCP session", std::io::Error::other(e.to_string())))?;
        running.waiting().await.map_err(|e| io("serving MCP", std::io::Error::other(e.to_string())))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty_len(v: &serde_json::Value) -> usize {
        serde_json::to_string_pretty(v).expect("encode").len()
    }

    #[test]
    fn fit_drops_only_the_items_past_the_bound() {
        let item =
            |i: usize| serde_json::json!({"id": format!("{i:012}"), "subject": "a fact of some length ".repeat(3)});
        let items: Vec<_> = (0..600).map(item).collect();
        let one = pretty_len(&serde_json::json!({"facts": [item(0)]})) - pretty_len(&serde_json::json!({"facts": []}));
        let v = fit(serde_json::json!({"query": "q", "facts": items}));
        let len = pretty_len(&v);
        assert!(len <= MAX_OUTPUT, "{len} bytes");
        // Runs of items leave together, but never more than one run's worth past the bound.
        assert!(len > MAX_OUTPUT - 2 * one, "{len} bytes, item {one}: cut too much");
        let kept = v["facts"].as_array().expect("facts").len();
        assert_eq!(v["facts"][kept - 1], item(kept - 1), "the first items stay, in order");
    }

    /// The length counted from the value is the length written, for every kind of value, at
    /// every depth: the bound holds only if the count does.
    #[test]
    fn a_reply_is_measured_as_it_would_be_written() {
        let values = [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!({"a": [], "b": {}, "c": [[]], "d": [{}]}),
            serde_json::json!([
                true,
                false,
                null,
                0,
                -1,
                18_446_744_073_709_551_615_u64,
                -9_223_372_036_854_775_808_i64
            ]),
            serde_json::json!([0.1, 1e300, -2.5e-8, 3.0, 0.7000000000000001, f64::MAX, f64::MIN_POSITIVE]),
            serde_json::json!({"quote\"key": "a \"b\" \\ c\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f} é 🦀 </script>"}),
            serde_json::json!({"deep": [[[[{"x": [1, {"y": "z"}]}]]]], "also": {"k": {"k": {"k": []}}}}),
        ];
        for v in values.iter().chain([&serde_json::json!({"all": values.to_vec()})]) {
            assert_eq!(super::pretty_len(v, 0), serde_json::to_string_pretty(v).expect("encode").len(), "{v}");
        }
        let mut rng = 7u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        fn random(next: &mut dyn FnMut() -> u64, depth: u32) -> serde_json::Value {
            match next() % if depth > 3 { 4 } else { 6 } {
                0 => serde_json::json!(next() as i64 >> (next() % 60)),
                1 => serde_json::json!((next() % 100_000) as f64 / ((next() % 999) + 1) as f64),
                2 => serde_json::json!((0..next() % 12)
                    .map(|_| char::from_u32((next() % 0x3000) as u32).unwrap_or('x'))
                    .collect::<String>()),
                3 => serde_json::json!(next() & 1 == 0),
                4 => serde_json::Value::Array((0..next() % 5).map(|_| random(next, depth + 1)).collect()),
                _ => serde_json::Value::Object(
                    (0..next() % 5).map(|i| (format!("k{i}\t{}", next() % 9), random(next, depth + 1))).collect(),
                ),
            }
        }
        for _ in 0..500 {
            let v = random(&mut next, 0);
            assert_eq!(super::pretty_len(&v, 0), serde_json::to_string_pretty(&v).expect("encode").len(), "{v}");
        }
    }

    #[test]
    fn fit_leaves_a_small_reply_as_it_is() {
        let v = serde_json::json!({"facts": [{"id": "x"}], "query": "q"});
        assert_eq!(fit(v.clone()), v);
    }
}
