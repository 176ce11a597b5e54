//! `git neo mcp`: the MCP server over stdio (rmcp), a thin layer over the same library the CLI
//! uses. Like the CLI, it owns its I/O: the protocol on stdin/stdout, nothing else printed.
//!
//! What stays warm across calls: the folded memory (reloaded only when a ref tip moved, for
//! example after a write by another process), the embedding model (loaded once), the recall
//! indexes (caught up incrementally when the tips move) and the Construct library with its
//! pattern vectors. Every call is validated first (unknown or mistyped arguments are a tool error)
//! and writes nothing when invalid; every reply is bounded to [`MAX_OUTPUT`] bytes and says when
//! it was cut.

pub mod tools;

use crate::cli::recall::load_embedder;
use git_neo::api::{AddRequest, Memory, Similarity};
use git_neo::attempts::{AttemptRequest, CheckSpec};
use git_neo::construct::Library;
use git_neo::embed::Embedder;
use git_neo::index::Indexes;
use git_neo::record::{FactType, Record, RecordId, Timestamp};
use git_neo::store::{Store, StoreOptions};
use git_neo::Error;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::sync::Mutex;

/// The most a reply carries, in bytes.
pub const MAX_OUTPUT: usize = 16_000;

/// Recall's token budget when the caller gives none (smaller than the CLI's: it lands in a context).
pub const DEFAULT_BUDGET: usize = 4_000;

/// The memory, model, indexes and library, kept between calls.
struct Warm {
    dir: PathBuf,
    ref_name: Option<String>,
    memory: Option<Memory>,
    /// The recall indexes and the tips they were opened at.
    indexes: Option<(Indexes, Vec<String>)>,
    embedder: Option<Box<dyn Embedder>>,
    /// Why there is no embedder, once asked.
    no_embedder: Option<String>,
    library: Option<Library>,
}

/// The server: one warm state behind a lock (calls are handled one at a time).
pub struct NeoServer {
    warm: Mutex<Warm>,
}

type ToolResult = Result<String, String>;

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
    serde_json::from_value(serde_json::Value::Object(raw.unwrap_or_default()))
        .map_err(|e| format!("invalid arguments for {tool}: {e}; see the tool's input schema"))
}

fn err(e: Error) -> String {
    format!("error: {e}")
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("error: cannot encode the reply: {e}"))
}

impl Warm {
    /// The memory, reloaded when any ref tip it was read from has moved.
    fn memory(&mut self) -> Result<&mut Memory, Error> {
        let stale = match &self.memory {
            None => true,
            Some(m) => {
                let now: Vec<String> = m.store().tips()?.into_iter().map(|(_, c)| c.to_string()).collect();
                now != m.tip_ids()
            }
        };
        if stale {
            let store =
                Store::discover(&self.dir, StoreOptions { ref_name: self.ref_name.clone(), lock_timeout: None })?;
            self.memory = Some(Memory::load(store)?);
        }
        Ok(self.memory.as_mut().expect("loaded above"))
    }

    /// Load the model once; remember why when there is none.
    fn ensure_embedder(&mut self) {
        if self.embedder.is_none() && self.no_embedder.is_none() {
            match load_embedder() {
                Ok(e) => self.embedder = Some(e),
                Err(why) => self.no_embedder = Some(why.to_string()),
            }
        }
    }

    /// Bring the recall indexes to the memory's current tips (catching up, or building).
    fn refresh_indexes(&mut self) -> Result<(), Error> {
        self.memory()?;
        self.ensure_embedder();
        let memory = self.memory.as_ref().expect("loaded by memory()");
        let tips = memory.tip_ids();
        if self.indexes.as_ref().is_some_and(|(_, t)| *t == tips) {
            return Ok(());
        }
        self.indexes = None;
        let opened = memory.open_indexes(self.embedder.as_deref_mut().map(|e| e as _), &mut |_, _| {});
        let (indexes, _) = match opened {
            Err(Error::Index(git_neo::index::IndexError::Embed(e))) => {
                // A model that fails must not take recall down: lexical from here on.
                self.embedder = None;
                self.no_embedder = Some(format!("the embedding model failed: {e}"));
                memory.open_indexes(None, &mut |_, _| {})?
            }
            other => other?,
        };
        self.indexes = Some((indexes, tips));
        Ok(())
    }

    fn library(&mut self) -> Result<&mut Library, Error> {
        if self.library.is_none() {
            let store = Store::discover(&self.dir, StoreOptions::default()).ok();
            let dir = store.as_ref().and_then(|s| s.construct_dir());
            let mut library = Library::load(dir.as_deref()).map_err(|e| Error::invalid("construct", e.to_string()))?;
            if let Some(s) = &store {
                library.cache_vectors_in(s.common_dir().join("neo").join("construct-vectors.json"));
            }
            self.library = Some(library);
        }
        Ok(self.library.as_mut().expect("loaded above"))
    }

    fn recall(&mut self, a: tools::RecallArgs) -> ToolResult {
        let mut types = Vec::new();
        for t in &a.types {
            types.push(FactType::from_word(t.trim()).ok_or_else(|| {
                format!("error: types: {t:?} is not a fact type; use one of: {}", FactType::expected())
            })?);
        }
        if a.query.trim().is_empty() {
            return Err("error: query: is empty; say what the task is about".into());
        }
        self.refresh_indexes().map_err(err)?;
        let memory = self.memory.as_ref().expect("refreshed");
        let store = memory.store();
        let now = crate::cli::write_context_for(store).map(|w| w.now).unwrap_or(Timestamp(0));
        let as_of = match a.as_of.as_deref().map(str::trim) {
            None => None,
            Some(v) => Some(match Timestamp::parse(v) {
                Some(t) => t,
                None => memory.commit_time(v).map_err(|_| {
                    format!("error: as_of: {v:?} is neither a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ) nor a commit")
                })?,
            }),
        };
        let req = git_neo::recall::Request {
            query: a.query,
            k: a.k.unwrap_or(10).clamp(1, 50),
            budget: a.budget.unwrap_or(DEFAULT_BUDGET).clamp(200, 50_000),
            types,
            scope: a.scope,
            now,
            as_of,
        };
        let (indexes, _) = self.indexes.as_ref().expect("refreshed");
        let mut result = memory.recall(indexes, self.embedder.as_deref_mut().map(|e| e as _), &req).map_err(err)?;
        let mut embedder = self.embedder.take();
        let hits = self
            .library()
            .and_then(|l| {
                l.search_with(
                    &req.query,
                    result.query_vector.as_ref(),
                    git_neo::construct::RECALL_PATTERNS,
                    embedder.as_deref_mut().map(|e| e as _),
                )
                .map_err(|e| Error::invalid("construct", e.to_string()))
            })
            .map_err(err);
        self.embedder = embedder;
        result
            .attach_construct(hits?.into_iter().filter(|h| h.score >= git_neo::construct::RECALL_MIN_SCORE).collect());
        let mut text = git_neo::recall::render::markdown(&result);
        if let Some(why) = &self.no_embedder {
            text.push_str(&format!("_(semantic recall off: {why})_\n"));
        }
        Ok(text)
    }

    fn add_fact(&mut self, a: tools::AddFactArgs) -> ToolResult {
        let req = AddRequest {
            fact_type: a.fact_type,
            subject: a.subject,
            body: a.body,
            scope: a.scope,
            tags: a.tags,
            key: a.key,
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
        };
        self.memory().map_err(err)?;
        // Similarity supersession needs the indexes at the current tips (kept warm, so this is a
        // catch-up of the last write at most); without them the step is skipped and says why.
        let opened = self.refresh_indexes();
        let Warm { memory, indexes, embedder, no_embedder, .. } = self;
        let memory = memory.as_mut().expect("loaded above");
        let wc = crate::cli::write_context_for(memory.store()).map_err(err)?;
        let plan = {
            let memory: &Memory = memory;
            let mut similar = |record: &Record, candidates: &[RecordId]| -> Result<Similarity, Error> {
                let (Ok(()), Some((indexes, _)), Some(embedder)) = (&opened, indexes.as_ref(), embedder.as_deref_mut())
                else {
                    let why = match &opened {
                        Err(e) => format!("the recall index could not be opened: {e}"),
                        Ok(()) => no_embedder.clone().unwrap_or_else(|| "no embedding model".into()),
                    };
                    return Ok(Similarity::Unavailable(why));
                };
                match memory.similarity_scores(indexes, embedder, record, candidates) {
                    Ok(s) => Ok(Similarity::Scores(s)),
                    Err(Error::Index(git_neo::index::IndexError::Embed(e))) => {
                        Ok(Similarity::Unavailable(format!("the embedding model failed: {e}")))
                    }
                    Err(e) => Err(e),
                }
            };
            memory.plan_add(&req, &wc, &mut similar).map_err(err)?
        };
        let outcome = memory.apply_add(plan, &wc).map_err(err)?;
        Ok(json(&outcome))
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
            scope: a.scope,
            tags: a.tags,
            retry_of: None,
            suggestion: a.suggestion,
        };
        let memory = self.memory().map_err(err)?;
        let wc = crate::cli::write_context_for(memory.store()).map_err(err)?;
        Ok(json(&memory.attempt(&req, &wc).map_err(err)?))
    }

    fn mark_outdated(&mut self, a: tools::IdReasonArgs) -> ToolResult {
        let memory = self.memory().map_err(err)?;
        let wc = crate::cli::write_context_for(memory.store()).map_err(err)?;
        Ok(json(&memory.outdated(&a.id, &a.reason, &wc).map_err(err)?))
    }

    fn forget(&mut self, a: tools::IdReasonArgs) -> ToolResult {
        let memory = self.memory().map_err(err)?;
        let wc = crate::cli::write_context_for(memory.store()).map_err(err)?;
        Ok(json(&memory.forget(&a.id, &a.reason, &wc).map_err(err)?))
    }

    fn show(&mut self, a: tools::IdArgs) -> ToolResult {
        let memory = self.memory().map_err(err)?;
        Ok(json(&memory.show(&a.id).map_err(err)?))
    }

    fn task_history(&mut self, a: tools::TaskArgs) -> ToolResult {
        let memory = self.memory().map_err(err)?;
        let history = memory.task_history(&a.task).map_err(err)?;
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
        Ok(json(&serde_json::json!({ "task": a.task, "total": total, "shown": rows.len(), "attempts": rows })))
    }

    fn construct_search(&mut self, a: tools::ConstructArgs) -> ToolResult {
        self.ensure_embedder();
        let mut embedder = self.embedder.take();
        let hits = self.library().map_err(err).and_then(|l| {
            l.search(&a.query, a.k.unwrap_or(5).clamp(1, 20), embedder.as_deref_mut().map(|e| e as _))
                .map_err(|e| format!("error: {e}"))
        });
        self.embedder = embedder;
        Ok(json(&hits?))
    }

    fn call(&mut self, name: &str, raw: Option<serde_json::Map<String, serde_json::Value>>) -> Option<ToolResult> {
        Some(match name {
            "recall" => args(name, raw).and_then(|a| self.recall(a)),
            "add_fact" => args(name, raw).and_then(|a| self.add_fact(a)),
            "record_attempt" => args(name, raw).and_then(|a| self.record_attempt(a)),
            "mark_outdated" => args(name, raw).and_then(|a| self.mark_outdated(a)),
            "forget" => args(name, raw).and_then(|a| self.forget(a)),
            "show" => args(name, raw).and_then(|a| self.show(a)),
            "task_history" => args(name, raw).and_then(|a| self.task_history(a)),
            "construct_search" => args(name, raw).and_then(|a| self.construct_search(a)),
            _ => return None,
        })
    }
}

impl NeoServer {
    pub fn new(dir: PathBuf, ref_name: Option<String>) -> NeoServer {
        NeoServer {
            warm: Mutex::new(Warm {
                dir,
                ref_name,
                memory: None,
                indexes: None,
                embedder: None,
                no_embedder: None,
                library: None,
            }),
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
        let result = match warm.call(&request.name, request.arguments) {
            Some(r) => r,
            None => {
                return Err(McpError::invalid_params(
                    format!("no tool named {:?}; tools/list names them", request.name),
                    None,
                ))
            }
        };
        Ok(match result {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(bounded(text))]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(bounded(text))]),
        }
        .into())
    }
}

/// Serve on stdin/stdout until the client closes the connection.
pub fn serve(dir: PathBuf, ref_name: Option<String>) -> Result<(), Error> {
    let io = |context: &str, e: std::io::Error| Error::Io { context: context.into(), source: e };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io("starting the MCP server's runtime", e))?;
    runtime.block_on(async move {
        let running = NeoServer::new(dir, ref_name)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| io("starting the MCP session", std::io::Error::other(e.to_string())))?;
        running.waiting().await.map_err(|e| io("serving MCP", std::io::Error::other(e.to_string())))?;
        Ok(())
    })
}
