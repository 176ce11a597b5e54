//! `git neo recall`, `git neo reindex` and `git neo model status`: semantic memory from the CLI.

use super::Ctx;
use git_neo::api::Front;
use git_neo::api::{LiveKey, RecallQuery};
use git_neo::embed::{FastEmbedder, ModelPaths};
use git_neo::Error;

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
    #[arg(long = "type", short = 't', value_parser = super::completions::Offer(super::completions::FACT_TYPES), hide_possible_values = true)]
    types: Vec<String>,
    /// Only facts and attempts with this area label (the global --scope picks one scope).
    #[arg(long)]
    area: Option<String>,
    /// Answer from the memory as it stood then: a date (YYYY-MM-DD), a UTC time, or a commit.
    #[arg(long, value_name = "DATE|COMMIT")]
    as_of: Option<String>,
    /// Also read the sessions of other worktrees (by default: the project, user and org memories
    /// and this worktree's current session; --scope session:NAME reads one session alone).
    #[arg(long)]
    all_sessions: bool,
}

#[derive(clap::Subcommand)]
pub enum ModelCommand {
    /// Say whether the embedding model and ONNX Runtime are installed, and where.
    Status,
}

pub fn recall(ctx: &mut Ctx, args: RecallArgs) -> Result<(), Error> {
    // Inside a working session, recall answers at what the session started from.
    let live = ctx.session.current_session().map(LiveKey::Working);
    let result = answer(ctx, args, Front::Cli, live)?;
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
/// Inside conversation `conversation` (the agent's id for it), the answer is at what the
/// conversation started from.
pub fn answer_for(
    ctx: &mut Ctx,
    query: String,
    budget: usize,
    conversation: Option<String>,
) -> Result<git_neo::recall::Recall, Error> {
    answer(
        ctx,
        RecallArgs { query, k: 5, budget, types: Vec::new(), area: None, as_of: None, all_sessions: false },
        Front::Hook,
        conversation.filter(|c| !c.trim().is_empty()).map(LiveKey::Conversation),
    )
}

fn answer(
    ctx: &mut Ctx,
    args: RecallArgs,
    front: Front,
    live: Option<LiveKey>,
) -> Result<git_neo::recall::Recall, Error> {
    if let Some(key) = &live {
        ctx.session.resume_live(key)?;
    }
    let query = RecallQuery {
        query: args.query,
        k: args.k,
        budget: args.budget,
        types: args.types,
        area: args.area,
        as_of: args.as_of,
        front: Some(front),
        all_sessions: args.all_sessions,
    };
    let mut result = ctx.session.recall(&query);
    ctx.say_notices();
    if let (Ok(r), Some(key)) = (result.as_mut(), &live) {
        if let Some(stale) = r.stale.as_mut() {
            stale.refresh = match key {
                LiveKey::Working(_) => "Run `git neo session refresh` to take it in.".into(),
                LiveKey::Conversation(id) => format!(
                    "A new conversation takes it in (or `git neo session refresh --conversation {}`).",
                    git_neo::display::escape(id)
                ),
            };
        }
    }
    result
}

pub fn reindex(ctx: &mut Ctx) -> Result<(), Error> {
    let reindexed = ctx.session.reindex()?;
    ctx.say_notices();
    if ctx.out.json {
        ctx.out.json(&reindexed);
    } else {
        let vectors = reindexed.stamp.model.clone().unwrap_or_else(|| "none (lexical only)".into());
        ctx.out.line(&format!("indexed {} records; vectors: {vectors}", reindexed.stamp.records));
    }
    Ok(())
}

pub fn model(ctx: &mut Ctx, cmd: ModelCommand) -> Result<(), Error> {
    match cmd {
        ModelCommand::Status => {
            let paths = ModelPaths::in_cache(&super::cache_root(&super::process_env));
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
