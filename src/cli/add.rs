//! `git neo add`: add a typed fact and print its id.

use super::Ctx;
use git_neo::api::{AddRequest, SimilarityCheck};
use git_neo::Error;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Fact type: constraint, architecture, pattern, review, decision, known-unknown, failure.
    #[arg(long = "type", short = 't', value_name = "TYPE", value_parser = super::completions::Offer(super::completions::FACT_TYPES), hide_possible_values = true)]
    fact_type: String,
    /// One-line summary.
    #[arg(long, short = 's')]
    subject: String,
    /// Markdown body.
    #[arg(long, short = 'b', conflicts_with = "body_file")]
    body: Option<String>,
    /// Read the body from a file, or from stdin with `-`.
    #[arg(long, value_name = "PATH")]
    body_file: Option<PathBuf>,
    /// A free-form area label: the part of the project this is about (default: the scope's
    /// name). Where the fact is stored is the global `--scope`.
    #[arg(long)]
    area: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Stable subject+predicate, so later facts about the same thing share it.
    #[arg(long)]
    key: Option<String>,
    /// What it is about as "subject / predicate" (e.g. "mobile team / project"); normalised into
    /// the key, so a later fact with the same slot replaces this one.
    #[arg(long)]
    slot: Option<String>,
    /// Initial confidence, 0.0 to 1.0 (default by provenance: structural 0.8, observed 0.7, inferred 0.5).
    #[arg(long)]
    confidence: Option<f64>,
    /// structural, observed (default) or inferred.
    #[arg(long, value_parser = super::completions::Offer(super::completions::PROVENANCES), hide_possible_values = true)]
    provenance: Option<String>,
    /// Id (prefix) of a fact this one depends on (repeatable).
    #[arg(long = "depends-on", value_name = "ID")]
    depends_on: Vec<String>,
    /// PATH[:START-END] relative to the repository root (repeatable).
    #[arg(long = "anchor", value_name = "PATH[:START-END]")]
    anchors: Vec<String>,
    /// Valid from this date (YYYY-MM-DD or a UTC time).
    #[arg(long)]
    valid_from: Option<String>,
    /// Valid until this date.
    #[arg(long)]
    valid_to: Option<String>,
    /// Id (prefix) of a fact this one replaces (repeatable; `--updates` is the same).
    #[arg(long = "supersedes", visible_alias = "updates", value_name = "ID")]
    supersedes: Vec<String>,
    /// Id (prefix) of a fact this one extends: both stay valid, linked (repeatable).
    #[arg(long = "extends", value_name = "ID")]
    extends: Vec<String>,
    /// Id (prefix) of a fact this one is inferred from; it needs review when a source is replaced.
    #[arg(long = "derives-from", value_name = "ID")]
    derives_from: Vec<String>,
    /// Why this fact replaces what it replaces.
    #[arg(long)]
    reason: Option<String>,
    /// Supersede nothing by key or similarity.
    #[arg(long, conflicts_with = "supersedes")]
    no_supersede: bool,
    /// A code snippet this fact recommends; `git neo outcomes` looks for it in later commits.
    #[arg(long)]
    suggestion: Option<String>,
    /// A section of an ingested document this fact cites: `PATH#heading` or `<source id>#heading`
    /// (repeatable); when that section changes, the fact is flagged for review.
    #[arg(long = "source", value_name = "SOURCE#HEADING")]
    sources: Vec<String>,
    /// Show what would be written and superseded, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

fn read_body(args: &Args) -> Result<String, Error> {
    let Some(path) = &args.body_file else { return Ok(args.body.clone().unwrap_or_default()) };
    // Read at most one byte past the limit: enough to refuse a body that is too long (naming the
    // limit) without holding a stream like /dev/zero in memory.
    let limit = git_neo::record::validate::MAX_BODY_BYTES as u64;
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit + 1).read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit + 1).read_to_end(&mut bytes)).map(|_| ())
    };
    read.map_err(|e| Error::invalid("body", format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(Error::invalid(
            "body",
            format!(
                "{} holds more than {limit} bytes, the limit; keep a record to a note and link to documents instead",
                path.display()
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid(
            "body",
            format!(
                "is not valid UTF-8 (first bad byte at offset {}); save the file as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

impl Args {
    /// Whether the body comes from standard input (`--body-file -`).
    pub fn reads_stdin(&self) -> bool {
        self.body_file.as_deref().is_some_and(|p| p == std::path::Path::new("-"))
    }
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let body = read_body(&args)?;
    let req = AddRequest {
        fact_type: args.fact_type,
        subject: args.subject,
        body,
        area: args.area,
        tags: args.tags,
        key: args.key,
        slot: args.slot,
        confidence: args.confidence,
        provenance: args.provenance,
        depends_on: args.depends_on,
        anchors: args.anchors,
        valid_from: args.valid_from,
        valid_to: args.valid_to,
        supersedes: args.supersedes,
        extends: args.extends,
        derives_from: args.derives_from,
        no_supersede: args.no_supersede,
        reason: args.reason,
        suggestion: args.suggestion,
        created_at: None,
        sources: args.sources,
    };
    let outcome = ctx.session.dry_run(args.dry_run, |s| s.add(&req))?;
    ctx.say_notices();
    if ctx.out.json {
        ctx.out.json(&outcome);
        return Ok(());
    }
    ctx.out.line(&outcome.id.to_hex());
    let would = if outcome.dry_run { "would supersede" } else { "superseded" };
    for s in &outcome.superseded {
        let score = s.score.map(|v| format!(" {v:.3}")).unwrap_or_default();
        ctx.out.note(&format!("{would} {} ({}{score}): {}", s.old.short(), s.method, s.subject));
    }
    if let Some(SimilarityCheck::Skipped { why }) = &outcome.similarity {
        ctx.out.note(&format!("similarity supersession skipped: {why}"));
    }
    for p in &outcome.possible_updates {
        ctx.out.note(&format!(
            "possibly an update of {} (same thing \"{}\", {}): {}; if it is, run this again with --supersedes {}",
            p.id.short(),
            p.thing,
            p.predicate,
            p.subject,
            p.id.short()
        ));
    }
    if outcome.deduplicated && !outcome.superseded.is_empty() {
        ctx.out.note(&format!("already stored as {}: only its supersession was written", outcome.id.short()));
    } else if outcome.deduplicated {
        let where_ = if outcome.proposed { " (a pending proposal)" } else { "" };
        ctx.out.note(&format!("already stored as {}{where_}: nothing written", outcome.id.short()));
    } else if outcome.dry_run {
        ctx.out.note("dry run: nothing written");
    } else if let Some(how) = &outcome.shared {
        ctx.out.note(&format!("added {} to the org memory: {how}", outcome.path));
    } else if outcome.proposed {
        ctx.out.note(&format!(
            "proposed (neo.mode is review): `git neo approve {}` moves it to the memory",
            outcome.id.short()
        ));
    } else {
        let ref_name = ctx.session.ref_name()?;
        let scope = match ctx.session.target() {
            git_neo::scope::Scope::Project => String::new(),
            s => format!(" of the {s} memory"),
        };
        ctx.out.note(&format!("added {} to {ref_name}{scope}", outcome.path));
    }
    Ok(())
}
