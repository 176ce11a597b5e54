//! `git neo recall`, `git neo reindex` and `git neo model status`: semantic memory from the CLI.

use super::Ctx;
use git_neo::embed::{EmbedError, Embedder, FastEmbedder, HashEmbedder, ModelPaths};
use git_neo::index::Refresh;
use git_neo::record::FactType;
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct RecallArgs {
    /// What the task is about.
    query: String,
    /// Relevant facts to show at most.
    #[arg(short, long, default_value_t = 10)]
    k: usize,
    /// Token budget for the whole answer.
    #[arg(long, default_value_t = git_neo::recall::DEFAULT_BUDGET)]
    budget: usize,
    /// Only facts of this type (repeatable).
    #[arg(long = "type", short = 't')]
    types: Vec<String>,
    /// Only this scope.
    #[arg(long)]
    scope: Option<String>,
    /// Answer from the memory as it stood then: a date (YYYY-MM-DD), a UTC time, or a commit.
    #[arg(long, value_name = "DATE|COMMIT")]
    as_of: Option<String>,
}

#[derive(clap::Subcommand)]
pub enum ModelCommand {
    /// Say whether the embedding model and ONNX Runtime are installed, and where.
    Status,
}

/// The cache root: `GIT_NEO_CACHE_DIR`, else `$XDG_CACHE_HOME/git-neo`, else `~/.cache/git-neo`.
pub fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("GIT_NEO_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|x| x.join("git-neo")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("git-neo")))
        .unwrap_or_else(|| PathBuf::from(".git-neo-cache"))
}

/// Why there is no embedder.
pub enum NoEmbedder {
    /// `GIT_NEO_EMBEDDER=none`.
    Disabled,
    /// The model or ONNX Runtime is not installed.
    NotInstalled,
    /// It is installed but does not load.
    Failed(String),
}

impl std::fmt::Display for NoEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoEmbedder::Disabled => f.write_str("embeddings are turned off (GIT_NEO_EMBEDDER=none)"),
            NoEmbedder::NotInstalled => {
                f.write_str("no embedding model is installed (scripts/install-model.sh installs one)")
            }
            NoEmbedder::Failed(e) => write!(f, "the embedding model does not load: {e}"),
        }
    }
}

/// Load the embedder without saying anything: the installed model; `GIT_NEO_EMBEDDER=hash`
/// selects the deterministic test embedder, `GIT_NEO_EMBEDDER=none` none.
pub fn load_embedder() -> Result<Box<dyn Embedder>, NoEmbedder> {
    match std::env::var("GIT_NEO_EMBEDDER").ok().as_deref() {
        Some("hash") => return Ok(Box::new(HashEmbedder::new(384))),
        Some("none") => return Err(NoEmbedder::Disabled),
        _ => {}
    }
    match FastEmbedder::load(&ModelPaths::in_cache(&cache_root())) {
        Ok(e) => Ok(Box::new(e)),
        Err(EmbedError::NotInstalled { .. }) => Err(NoEmbedder::NotInstalled),
        Err(e) => Err(NoEmbedder::Failed(e.to_string())),
    }
}

/// The embedder to use for recall. Without a model, says once how to get one.
pub fn embedder(ctx: &Ctx) -> Option<Box<dyn Embedder>> {
    match load_embedder() {
        Ok(e) => Some(e),
        Err(NoEmbedder::Disabled) => None,
        Err(NoEmbedder::NotInstalled) => {
            ctx.out
                .note("note: semantic recall is off (no embedding model); run scripts/install-model.sh to enable it");
            None
        }
        Err(NoEmbedder::Failed(e)) => {
            ctx.out.warn(&format!("{e}; falling back to lexical recall"));
            None
        }
    }
}

/// Lend the boxed embedder for one call (shortening its trait-object lifetime to the borrow's).
fn reborrow(e: &mut Option<Box<dyn Embedder>>) -> Option<&mut dyn Embedder> {
    e.as_mut().map(|b| &mut **b as &mut dyn Embedder)
}

fn report(ctx: &Ctx, refresh: &Refresh) {
    match refresh {
        Refresh::UpToDate | Refresh::CaughtUp { .. } => {}
        Refresh::Rebuilt { reason, records, embedded } => {
            ctx.out.note(&format!("rebuilt the recall index ({reason}): {records} records, {embedded} embedded"))
        }
    }
}

pub fn recall(ctx: &mut Ctx, args: RecallArgs) -> Result<(), Error> {
    let result = answer(ctx, args)?;
    if ctx.out.json {
        ctx.out.json(&result);
    } else {
        for l in git_neo::recall::render::markdown(&result).lines() {
            ctx.out.line(l);
        }
    }
    Ok(())
}

/// Recall for `query` with the defaults and a `budget`: what the prompt hook prints.
pub fn answer_for(ctx: &mut Ctx, query: String, budget: usize) -> Result<git_neo::recall::Recall, Error> {
    answer(ctx, RecallArgs { query, k: 5, budget, types: Vec::new(), scope: None, as_of: None })
}

fn answer(ctx: &mut Ctx, args: RecallArgs) -> Result<git_neo::recall::Recall, Error> {
    let memory = ctx.memory()?;
    let wc_now = ctx.write_context(&memory).map(|w| w.now).unwrap_or(git_neo::record::Timestamp(0));
    let mut types = Vec::new();
    for t in &args.types {
        types.push(FactType::from_word(t.trim()).ok_or_else(|| {
            Error::invalid("type", format!("{t:?} is not a fact type; use one of: {}", FactType::expected()))
        })?);
    }
    let as_of = match args.as_of.as_deref().map(str::trim) {
        None => None,
        Some(v) => Some(match git_neo::record::Timestamp::parse(v) {
            Some(t) => t,
            None => memory.commit_time(v).map_err(|_| {
                Error::invalid(
                    "as_of",
                    format!(
                        "{v:?} is neither a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ) nor a commit in this repository"
                    ),
                )
            })?,
        }),
    };
    let mut embedder = embedder(ctx);
    let bar = ctx.out.progress(0, "embedding");
    let mut progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let (indexes, refresh) = match memory.open_indexes(reborrow(&mut embedder), &mut progress) {
        // A model that fails while embedding must not take recall down: fall back to lexical.
        Err(Error::Index(git_neo::index::IndexError::Embed(e))) => {
            ctx.out.warn(&format!("{e}; falling back to lexical recall"));
            embedder = None;
            memory.open_indexes(None, &mut progress)?
        }
        other => other?,
    };
    bar.finish_and_clear();
    report(ctx, &refresh);
    let req = git_neo::recall::Request {
        query: args.query,
        k: args.k,
        budget: args.budget,
        types,
        scope: args.scope,
        now: wc_now,
        as_of,
    };
    let mut result = memory.recall(&indexes, reborrow(&mut embedder), &req)?;
    // The Construct comes after the project's own memory: a few patterns that clearly match.
    let mut library = super::construct::load_library(ctx)?;
    let hits = library
        .search_with(
            &req.query,
            result.query_vector.as_ref(),
            git_neo::construct::RECALL_PATTERNS,
            reborrow(&mut embedder),
        )
        .map_err(|e| Error::invalid("construct", e.to_string()))?;
    result.attach_construct(hits.into_iter().filter(|h| h.score >= git_neo::construct::RECALL_MIN_SCORE).collect());
    Ok(result)
}

pub fn reindex(ctx: &mut Ctx) -> Result<(), Error> {
    let memory = ctx.memory()?;
    let mut embedder = embedder(ctx);
    let bar = ctx.out.progress(0, "embedding");
    let (indexes, refresh) = memory.reindex(reborrow(&mut embedder), &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "refresh": refresh, "stamp": indexes.stamp }));
    } else {
        let vectors = indexes.stamp.model.clone().unwrap_or_else(|| "none (lexical only)".into());
        ctx.out.line(&format!("indexed {} records; vectors: {vectors}", indexes.stamp.records));
    }
    Ok(())
}

pub fn model(ctx: &mut Ctx, cmd: ModelCommand) -> Result<(), Error> {
    match cmd {
        ModelCommand::Status => {
            let paths = ModelPaths::in_cache(&cache_root());
            let missing = paths.missing();
            let loaded = if missing.is_empty() { Some(FastEmbedder::load(&paths).map(|_| ())) } else { None };
            let status = match &loaded {
                None => "not installed".to_string(),
                Some(Ok(())) => "installed and loads".to_string(),
                Some(Err(e)) => format!("installed but does not load: {e}"),
            };
            if ctx.out.json {
                ctx.out.json(&serde_json::json!({
                    "status": status,
                    "model_dir": paths.model_dir,
                    "runtime": paths.runtime,
                    "missing": missing,
                    "model": git_neo::embed::MODEL_ID,
                    "dim": git_neo::embed::MODEL_DIM,
                }));
            } else {
                ctx.out.line(&format!(
                    "model {} ({} dimensions): {status}",
                    git_neo::embed::MODEL_ID,
                    git_neo::embed::MODEL_DIM
                ));
                ctx.out.line(&format!("  model files: {}", paths.model_dir.display()));
                ctx.out.line(&format!("  ONNX Runtime: {}", paths.runtime.display()));
                for m in &missing {
                    ctx.out.line(&format!("  missing: {m}"));
                }
                if !missing.is_empty() {
                    ctx.out.line("  install with: scripts/install-model.sh (lexical recall works without it)");
                }
            }
            Ok(())
        }
    }
}
