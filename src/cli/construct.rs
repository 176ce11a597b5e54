//! `git neo construct lint | list | show | search`: the curated pattern library.

use super::Ctx;
use git_neo::construct::{self, LintProblem, Source};
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum ConstructCommand {
    /// Check patterns: front matter, the five sections, length. Default: the shipped library and
    /// the project's pattern directory; or the directories given.
    Lint {
        /// Directories of pattern files to check instead.
        dirs: Vec<PathBuf>,
    },
    /// Every pattern: name, title, where it comes from.
    List,
    /// One pattern, whole.
    Show {
        /// The pattern's name (its file name without .md).
        name: String,
    },
    /// Patterns for a query, best first (hybrid, like recall).
    Search {
        query: String,
        /// How many at most.
        #[arg(short, long, default_value_t = 5)]
        k: usize,
    },
}

/// The project's pattern directory, when run inside a repository with a work tree.
pub fn project_dir(ctx: &Ctx) -> Option<PathBuf> {
    ctx.session.construct_dir()
}

fn library_error(e: construct::ConstructError) -> Error {
    Error::invalid("construct", e.to_string())
}

/// Load the session's library, saying which project patterns fail lint (they are left out).
fn load_library(ctx: &mut Ctx) -> Result<(), Error> {
    ctx.session.library()?;
    ctx.say_notices();
    Ok(())
}

pub fn run(ctx: &mut Ctx, cmd: ConstructCommand) -> Result<(), Error> {
    match cmd {
        ConstructCommand::Lint { dirs } => lint(ctx, dirs),
        ConstructCommand::List => {
            load_library(ctx)?;
            let library = ctx.session.library()?;
            if ctx.out.json {
                ctx.out.json(&library.patterns);
                return Ok(());
            }
            for p in &library.patterns {
                let from = match &p.source {
                    Source::Shipped => "shipped".to_string(),
                    Source::Project { .. } => "project".to_string(),
                };
                let line = format!("{:<26} {:<8} {}", ctx.out.paint("33", &p.name), from, p.title);
                ctx.out.line(&line);
            }
            Ok(())
        }
        ConstructCommand::Show { name } => {
            load_library(ctx)?;
            let library = ctx.session.library()?;
            let Some(p) = library.get(&name) else {
                return Err(Error::invalid(
                    "name",
                    format!("no pattern is named {name:?}; `git neo construct list` shows the names"),
                ));
            };
            if ctx.out.json {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["text"] = serde_json::Value::String(p.text.clone());
                ctx.out.json(&v);
            } else {
                let text = p.text.clone();
                for l in text.lines() {
                    ctx.out.line(l);
                }
            }
            Ok(())
        }
        ConstructCommand::Search { query, k } => {
            let hits = ctx.session.construct_search(&query, k)?;
            ctx.say_notices();
            if ctx.out.json {
                ctx.out.json(&hits);
                return Ok(());
            }
            if hits.is_empty() {
                ctx.out.note("no pattern matches");
            }
            for h in hits {
                let intent = h.intent.split_whitespace().collect::<Vec<_>>().join(" ");
                let line = format!("{} {:.3} {}: {intent}", ctx.out.paint("33", &h.name), h.score, h.title);
                ctx.out.line(&line);
            }
            Ok(())
        }
    }
}

fn lint(ctx: &mut Ctx, dirs: Vec<PathBuf>) -> Result<(), Error> {
    let mut problems: Vec<LintProblem> = Vec::new();
    let mut files = 0;
    if dirs.is_empty() {
        files += construct::SHIPPED.len();
        problems.extend(construct::lint(construct::SHIPPED.iter().map(|(n, t)| (*n, *t))));
        if let Some(dir) = project_dir(ctx).filter(|d| d.is_dir()) {
            let found = construct::read_dir(&dir).map_err(library_error)?;
            files += found.len();
            problems.extend(construct::lint(found.iter().map(|(n, t, _)| (n.as_str(), t.as_str()))));
        }
    }
    for dir in &dirs {
        let found = construct::read_dir(dir).map_err(library_error)?;
        files += found.len();
        let mut these = construct::lint(found.iter().map(|(n, t, _)| (n.as_str(), t.as_str())));
        for p in &mut these {
            p.file = dir.join(&p.file).display().to_string();
        }
        problems.extend(these);
    }
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "files": files, "problems": problems }));
    } else {
        for p in &problems {
            ctx.out.line(&format!("{}: {}: {}", p.file, p.field, p.message));
        }
        ctx.out.note(&format!("{files} pattern(s) checked, {} problem(s)", problems.len()));
    }
    if !problems.is_empty() {
        ctx.exit = Some(super::EXIT_USER);
    }
    Ok(())
}
