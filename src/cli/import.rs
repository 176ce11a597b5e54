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
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<Line>(line) {
            Ok(l) => requests.push(AddRequest {
                fact_type: l.fact_type,
                subject: l.subject,
                body: l.body,
                scope: l.scope,
                tags: l.tags,
                key: l.key,
                confidence: l.confidence,
                provenance: l.provenance,
                depends_on: l.depends_on,
                anchors: l.anchors,
                valid_from: l.valid_from,
                valid_to: l.valid_to,
                ..AddRequest::default()
            }),
            Err(e) => problems.push(Problem::new(format!("line {}", n + 1), format!("{e}"))),
        }
    }
    if !problems.is_empty() {
        return Err(Error::Invalid(git_neo::record::Problems(problems)));
    }
    let mut memory = ctx.memory()?;
    let wc = ctx.write_context(&memory)?;
    let bar = ctx.out.progress(requests.len() as u64, "importing");
    let outcome = memory.import(&requests, args.batch_size, &wc, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        // A signal that arrived during the last commit stops the import here, between commits.
        if let Some(code) = super::signals::pending() {
            bar.finish_and_clear();
            std::process::exit(code);
        }
    })?;
    bar.finish_and_clear();
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        ctx.out.line(&format!(
            "added {} facts in {} commits ({} already stored)",
            outcome.added, outcome.commits, outcome.duplicates
        ));
    }
    Ok(())
}
