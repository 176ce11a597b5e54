//! `git neo export`: every valid fact with its state, as JSON Lines (`git neo import` reads them
//! back) or as a markdown handbook grouped by type.

use super::Ctx;
use git_neo::Error;
use std::path::PathBuf;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Markdown,
}

#[derive(clap::Args)]
pub struct Args {
    /// JSON Lines (one fact per line, importable) or a markdown handbook.
    #[arg(long, value_enum, default_value = "jsonl")]
    format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "PATH")]
    out: Option<PathBuf>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let facts = ctx.session.export()?;
    // `--json`: one JSON array of the same objects, for an agent.
    if ctx.out.json && args.out.is_none() {
        ctx.out.json(&facts);
        return Ok(());
    }
    let text = match args.format {
        Format::Jsonl => {
            let mut s = String::new();
            for f in &facts {
                let line = serde_json::to_string(&f)
                    .map_err(|e| Error::Integrity(format!("cannot encode fact {}: {e}", f.id.short())))?;
                s.push_str(&line);
                s.push('\n');
            }
            s
        }
        Format::Markdown => {
            let name = match ctx.session.target() {
                git_neo::scope::Scope::Project => {
                    let dir = ctx.session.work_dir()?.unwrap_or_else(|| ctx.dir.clone());
                    format!(
                        "Memory of {}",
                        dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                    )
                }
                s => format!("The {s} memory"),
            };
            ctx.session.export_markdown(&name)?
        }
    };
    match args.out {
        Some(path) => {
            std::fs::write(&path, &text)
                .map_err(|e| Error::Io { context: format!("writing {}", path.display()), source: e })?;
            ctx.out.note(&format!("wrote {} facts to {}", facts.len(), path.display()));
        }
        None => ctx.out.line(text.trim_end_matches('\n')),
    }
    Ok(())
}
