//! `git neo import`: add many facts from JSON Lines, validated all first, written in batches.

use super::Ctx;
use git_neo::api::AddRequest;
use git_neo::record::Problem;
use git_neo::Error;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A JSON Lines file (one fact object per line), or `-` for stdin.
    file: PathBuf,
    /// Records per commit.
    #[arg(long, default_value_t = 500)]
    batch_size: usize,
    /// Write the valid lines and report each invalid one with its reason (default: an invalid
    /// line stops the import before anything is written).
    #[arg(long)]
    skip_invalid: bool,
}

/// A line left out by `--skip-invalid`.
#[derive(serde::Serialize)]
struct SkippedLine {
    line: usize,
    reasons: Vec<String>,
}

/// One line of input: the same fields as `git neo add`, snake_case.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(rename = "type")]
    fact_type: String,
    subject: String,
    #[serde(default)]
    body: String,
    scope: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    key: Option<String>,
    confidence: Option<f64>,
    provenance: Option<String>,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    anchors: Vec<String>,
    valid_from: Option<String>,
    valid_to: Option<String>,
    // The state `git neo export` adds after the import fields: read, and ignored (a round trip
    // writes nothing new; the content decides identity).
    #[serde(default, rename = "id")]
    _id: Option<String>,
    #[serde(default, rename = "status")]
    _status: Option<String>,
    #[serde(default, rename = "current_confidence")]
    _current_confidence: Option<f64>,
    #[serde(default, rename = "successes")]
    _successes: Option<u64>,
    #[serde(default, rename = "author")]
    _author: Option<String>,
    #[serde(default, rename = "created_at")]
    _created_at: Option<String>,
    #[serde(default, rename = "needs_review")]
    _needs_review: Vec<String>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let mut bytes = Vec::new();
    let read = if args.file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(&args.file).and_then(|mut f| f.read_to_end(&mut bytes)).map(|_| ())
    };
    read.map_err(|e| Error::invalid("file", format!("cannot read {}: {e}", args.file.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| Error::invalid("file", format!("is not valid UTF-8 (offset {})", e.utf8_error().valid_up_to())))?;
    let mut requests = Vec::new();
    // The input line of each request, for reporting.
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<Line>(line) {
            Ok(l) => {
                lines.push(n + 1);
                requests.push(AddRequest {
                    fact_type: l.fact_type,
                    subject: l.subject,
                    body: l.body,
                    area: l.scope,
                    tags: l.tags,
                    key: l.key,
                    confidence: l.confidence,
                    provenance: l.provenance,
                    depends_on: l.depends_on,
                    anchors: l.anchors,
                    valid_from: l.valid_from,
                    valid_to: l.valid_to,
                    ..AddRequest::default()
                })
            }
            Err(e) => problems.push(Problem::new(format!("line {}", n + 1), format!("{e}"))),
        }
    }
    let mut skipped = Vec::new();
    if args.skip_invalid {
        skipped.extend(problems.drain(..).map(|p| SkippedLine {
            line: p.field.strip_prefix("line ").and_then(|n| n.parse().ok()).unwrap_or(0),
            reasons: vec![p.message],
        }));
    }
    if !problems.is_empty() {
        return Err(Error::Invalid(git_neo::record::Problems(problems)));
    }
    let mut memory = ctx.memory()?;
    let wc = ctx.write_context(&memory)?;
    let bar = ctx.out.progress(requests.len() as u64, "importing");
    let outcome = memory.import(&requests, args.batch_size, args.skip_invalid, &wc, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        // A signal that arrived during the last commit stops the import here, between commits.
        if let Some(code) = super::signals::pending() {
            bar.finish_and_clear();
            std::process::exit(code);
        }
    })?;
    bar.finish_and_clear();
    skipped.extend(outcome.skipped.iter().map(|s| SkippedLine { line: lines[s.index], reasons: s.problems.clone() }));
    skipped.sort_by_key(|s| s.line);
    if ctx.out.json {
        let mut v = serde_json::to_value(&outcome).unwrap_or_default();
        v["skipped"] = serde_json::to_value(&skipped).unwrap_or_default();
        ctx.out.json(&v);
    } else {
        for s in &skipped {
            ctx.out.warn(&format!("skipped line {}: {}", s.line, s.reasons.join("; ")));
        }
        ctx.out.line(&format!(
            "added {} facts in {} commits ({} already stored{})",
            outcome.added,
            outcome.commits,
            outcome.duplicates,
            if skipped.is_empty() { String::new() } else { format!(", {} invalid lines skipped", skipped.len()) }
        ));
    }
    Ok(())
}
