//! `git neo import`: add many facts from JSON Lines, or from an agent instruction file
//! (`--from agents-md|claude-md|cursor-rules|copilot|memory-md`, one fact per bullet or paragraph,
//! typed by [`git_neo::instructions::type_of`]), validated all first, written in batches.

use super::Ctx;
use git_neo::api::AddRequest;
use git_neo::record::Problem;
use git_neo::Error;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A JSON Lines file (one fact object per line), an instruction file with --from, or `-`
    /// for stdin.
    file: PathBuf,
    /// What the file is: jsonl (default) or csv (a header row); another memory tool's store:
    /// neo (a facts_*.json file), beads (.beads/issues.jsonl); or an agent instruction file:
    /// agents-md, claude-md, cursor-rules (a .mdc file), copilot, memory-md.
    #[arg(long, default_value = "jsonl", value_name = "FORMAT", value_parser = super::completions::Offer(super::completions::IMPORT_FORMATS), hide_possible_values = true)]
    from: String,
    /// For jsonl and csv: read git-neo's FIELD from the input's COLUMN (repeatable, e.g.
    /// `--map subject=title --map type=kind`); with a mapping (and always for csv) columns that
    /// are not import fields are left out instead of refused.
    #[arg(long = "map", value_name = "FIELD=COLUMN")]
    map: Vec<String>,
    /// Print the facts it would write (JSON Lines that `git neo import` takes, so types can be
    /// fixed before writing) and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Records per commit.
    #[arg(long, default_value_t = 500)]
    batch_size: usize,
    /// Write the valid lines and report each invalid one with its reason (default: an invalid
    /// line stops the import before anything is written).
    #[arg(long)]
    skip_invalid: bool,
    /// Replace nothing: no key or frame supersession (as `git neo add --no-supersede`).
    #[arg(long)]
    no_supersede: bool,
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
    let from = args.from.trim().to_string();
    let foreign = match from.as_str() {
        "neo" => Some(git_neo::foreign::neo(&text)),
        "beads" => Some(git_neo::foreign::beads(&text)),
        _ => None,
    };
    if let Some(foreign) = foreign {
        let foreign = foreign.map_err(|m| Error::invalid("file", m))?;
        return write_foreign(ctx, &args, foreign);
    }
    if from != "jsonl" && from != "csv" {
        let Some(format) = git_neo::instructions::Format::from_word(&from) else {
            return Err(Error::invalid(
                "from",
                format!(
                    "{from:?} is not a format; use jsonl, csv, neo, beads, agents-md, claude-md, cursor-rules, copilot or \
                     memory-md"
                ),
            ));
        };
        let requests = instruction_requests(ctx, format, &args.file, &text)?;
        return write(ctx, &args, requests, Vec::new(), Vec::new());
    }
    let mut requests = Vec::new();
    // The input line of each request, for reporting.
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for (n, object) in objects(&from, &text, &args.map)? {
        match object.and_then(|o| serde_json::from_value::<Line>(o).map_err(|e| e.to_string())) {
            Ok(l) => {
                lines.push(n);
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
            Err(e) => problems.push(Problem::new(format!("line {n}"), e)),
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
        // Lines that are not JSON are listed together with every problem of the lines that are:
        // one run names everything to fix.
        let checked = ctx.session.check_facts(&requests)?;
        for (found, n) in checked.into_iter().zip(&lines) {
            if let Some(Error::Invalid(p)) = found {
                problems.extend(p.0.into_iter().map(|p| Problem::new(format!("line {n}: {}", p.field), p.message)));
            }
        }
        let line_of = |p: &Problem| -> usize {
            p.field.strip_prefix("line ").and_then(|r| r.split(':').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
        };
        problems.sort_by_key(line_of);
        return Err(Error::Invalid(git_neo::record::Problems(problems)));
    }
    let requests = requests.into_iter().map(|r| (r, None)).collect();
    write(ctx, &args, requests, lines, skipped)
}

/// The fields of an input line (`Line`), which a mapping or a CSV header may name.
const FIELDS: &[&str] = &[
    "type",
    "subject",
    "body",
    "scope",
    "tags",
    "key",
    "confidence",
    "provenance",
    "depends_on",
    "anchors",
    "valid_from",
    "valid_to",
    "id",
    "status",
    "current_confidence",
    "successes",
    "author",
    "created_at",
    "needs_review",
];

/// The input as JSON objects with their line numbers (a line that does not parse is its error):
/// JSON Lines as they are, or CSV rows under their header (list fields split on `;`, numbers
/// read as numbers); with `map` (`FIELD=COLUMN`) the columns renamed, and then (as for every CSV)
/// columns that are no field left out.
/// An input line's number and its object (or why it is none).
type Numbered = (usize, Result<serde_json::Value, String>);

fn objects(from: &str, text: &str, map: &[String]) -> Result<Vec<Numbered>, Error> {
    let mut rename = std::collections::HashMap::new();
    for m in map {
        let (field, column) =
            m.split_once('=').filter(|(f, c)| FIELDS.contains(&f.trim()) && !c.trim().is_empty()).ok_or_else(|| {
                Error::invalid(
                    "map",
                    format!("{m:?} is not FIELD=COLUMN with FIELD one of: {}", FIELDS[..12].join(", ")),
                )
            })?;
        rename.insert(column.trim().to_string(), field.trim().to_string());
    }
    let lenient = from == "csv" || !rename.is_empty();
    let shape = |o: serde_json::Map<String, serde_json::Value>| -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (k, v) in o {
            let k = rename.get(&k).cloned().unwrap_or(k);
            if !lenient || FIELDS.contains(&k.as_str()) {
                out.insert(k, v);
            }
        }
        serde_json::Value::Object(out)
    };
    if from == "jsonl" {
        return Ok(text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                let v = match serde_json::from_str::<serde_json::Value>(l) {
                    Ok(serde_json::Value::Object(o)) => Ok(shape(o)),
                    Ok(_) => Err("is not a JSON object".to_string()),
                    Err(e) => Err(e.to_string()),
                };
                (n + 1, v)
            })
            .collect());
    }
    let rows = git_neo::foreign::csv_rows(text).map_err(|m| Error::invalid("file", m))?;
    let Some((header, rows)) = rows.split_first() else { return Ok(Vec::new()) };
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut o = serde_json::Map::new();
            for (column, cell) in header.iter().zip(row) {
                let field = rename.get(column.trim()).map(String::as_str).unwrap_or(column.trim());
                let cell = cell.trim();
                if cell.is_empty() {
                    continue;
                }
                let value = match field {
                    "tags" | "depends_on" | "anchors" | "needs_review" => serde_json::Value::from(
                        cell.split(';').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>(),
                    ),
                    "confidence" | "current_confidence" | "successes" => match cell.parse::<f64>() {
                        Ok(n) => serde_json::json!(n),
                        Err(_) => serde_json::Value::from(cell),
                    },
                    _ => serde_json::Value::from(cell),
                };
                o.insert(column.trim().to_string(), value);
            }
            (i + 2, Ok(shape(o)))
        })
        .collect())
}

/// Import another tool's store: facts level by level, then its supersessions.
fn write_foreign(ctx: &mut Ctx, args: &Args, foreign: git_neo::foreign::Foreign) -> Result<(), Error> {
    for why in &foreign.left_out {
        ctx.out.warn(&format!("left out {why}"));
    }
    if args.dry_run {
        let lines: Vec<serde_json::Value> =
            foreign.facts.iter().map(|f| as_line(&git_neo::api::request_of(f))).collect();
        if ctx.out.json {
            ctx.out.json(&serde_json::json!({"facts": lines, "links": foreign.links.len()}));
        } else {
            for l in &lines {
                ctx.out.line(&l.to_string());
            }
            ctx.out.note(&format!(
                "dry run: {} facts and {} supersessions, nothing written",
                foreign.facts.len(),
                foreign.links.len()
            ));
        }
        return Ok(());
    }
    let bar = ctx.out.progress(foreign.facts.len() as u64, "importing");
    let outcome = ctx.session.import_foreign(&foreign, args.batch_size, args.skip_invalid, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        for s in &outcome.facts.skipped {
            ctx.out.warn(&format!("skipped fact {}: {}", s.index + 1, s.problems.join("; ")));
        }
        ctx.out.line(&format!(
            "added {} facts in {} commits ({} already stored), {} supersessions{}",
            outcome.facts.added,
            outcome.facts.commits,
            outcome.facts.duplicates,
            outcome.supersessions,
            if outcome.links_dropped > 0 {
                format!("; {} links named facts not imported", outcome.links_dropped)
            } else {
                String::new()
            }
        ));
    }
    Ok(())
}

/// A request and, for an instruction file, why it has its type.
type TaggedRequest = (AddRequest, Option<String>);

/// The write requests for an instruction file: one per candidate, tagged with the format and the
/// file, anchored to its lines when the file is in the project's work tree.
fn instruction_requests(
    ctx: &mut Ctx,
    format: git_neo::instructions::Format,
    file: &std::path::Path,
    text: &str,
) -> Result<Vec<TaggedRequest>, Error> {
    let project = matches!(ctx.session.target(), git_neo::scope::Scope::Project);
    let work = ctx.session.work_dir().ok().flatten();
    let rel = match (project, work, file.canonicalize().ok()) {
        (true, Some(w), Some(f)) => {
            w.canonicalize().ok().and_then(|w| f.strip_prefix(&w).ok().map(|r| r.to_string_lossy().replace('\\', "/")))
        }
        _ => None,
    };
    let name =
        rel.clone().unwrap_or_else(|| file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    let mut tags = vec![format.word().to_string()];
    tags.extend(git_neo::record::validate::tag_of(&name));
    tags.sort();
    tags.dedup();
    Ok(git_neo::instructions::read(format, text)
        .into_iter()
        .map(|c| {
            let anchors = rel.iter().map(|r| format!("{r}:{}-{}", c.lines.0, c.lines.1)).collect();
            let req = AddRequest {
                fact_type: c.fact_type.to_string(),
                subject: c.subject,
                body: c.body,
                tags: tags.clone(),
                anchors,
                provenance: Some("observed".into()),
                ..AddRequest::default()
            };
            (req, Some(format!("lines {}-{}: {}", c.lines.0, c.lines.1, c.why)))
        })
        .collect())
}

/// One request as a JSON Lines input line (what a dry run prints).
fn as_line(r: &AddRequest) -> serde_json::Value {
    let mut v = serde_json::json!({"type": r.fact_type, "subject": r.subject});
    if !r.body.is_empty() {
        v["body"] = r.body.clone().into();
    }
    if !r.tags.is_empty() {
        v["tags"] = r.tags.clone().into();
    }
    if !r.anchors.is_empty() {
        v["anchors"] = r.anchors.clone().into();
    }
    if let Some(p) = &r.provenance {
        v["provenance"] = p.clone().into();
    }
    v
}

/// Write `requests` (or, with `--dry-run`, print them); `lines` are their input lines, for
/// reporting, when they came from JSON Lines.
fn write(
    ctx: &mut Ctx,
    args: &Args,
    requests: Vec<TaggedRequest>,
    lines: Vec<usize>,
    mut skipped: Vec<SkippedLine>,
) -> Result<(), Error> {
    if args.dry_run {
        if ctx.out.json {
            let all: Vec<serde_json::Value> = requests
                .iter()
                .map(|(r, why)| {
                    let mut v = as_line(r);
                    if let Some(w) = why {
                        v["why"] = w.clone().into();
                    }
                    v
                })
                .collect();
            ctx.out.json(&all);
        } else {
            for (r, why) in &requests {
                ctx.out.line(&as_line(r).to_string());
                if let Some(w) = why {
                    ctx.out.note(&format!("{:<13} {} ({w})", r.fact_type, r.subject));
                }
            }
            ctx.out.note(&format!(
                "dry run: {} facts, nothing written; save the lines above, fix any type, and `git neo import <file>`",
                requests.len()
            ));
        }
        return Ok(());
    }
    let lines = if lines.is_empty() { (1..=requests.len()).collect() } else { lines };
    let requests: Vec<AddRequest> = requests
        .into_iter()
        .map(|(r, _)| AddRequest { no_supersede: r.no_supersede || args.no_supersede, ..r })
        .collect();
    let bar = ctx.out.progress(requests.len() as u64, "importing");
    let outcome = ctx
        .session
        .import(&requests, args.batch_size, args.skip_invalid, &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            // A signal that arrived during the last commit stops the import here, between commits.
            if let Some(code) = super::signals::pending() {
                bar.finish_and_clear();
                std::process::exit(code);
            }
        })
        .map_err(|e| match e {
            // The library numbers requests; the person knows the lines of their file.
            Error::Invalid(p) => Error::Invalid(git_neo::record::Problems(
                p.0.into_iter()
                    .map(|mut p| {
                        if let Some((n, rest)) = p.field.strip_prefix("record ").and_then(|r| r.split_once(':')) {
                            if let Some(line) = n.parse::<usize>().ok().and_then(|n| lines.get(n.wrapping_sub(1))) {
                                p.field = format!("line {line}:{rest}");
                            }
                        }
                        p
                    })
                    .collect(),
            )),
            other => other,
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
        for s in &outcome.superseded {
            ctx.out.note(&format!("superseded {} ({}): {}", s.old.short(), s.method, s.subject));
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
