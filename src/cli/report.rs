//! `git neo report`: the static HTML page of what the memory is doing, written to a directory
//! (default `.git/neo/report/`): one self-contained file, no server, no network.

use super::Ctx;
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The directory to write `index.html` into (default: `neo/report` in the git directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let data = ctx.out.spinning("reading the memory's history", || ctx.session.report_data())?;
    let dir = match args.out {
        Some(d) if d.is_absolute() => d,
        Some(d) => ctx.dir.join(d),
        None => ctx.session.caches_root()?.join("report"),
    };
    let path = dir.join("index.html");
    let io = |e| Error::Io { context: format!("writing {}", path.display()), source: e };
    std::fs::create_dir_all(&dir).map_err(io)?;
    std::fs::write(&path, git_neo::report::html(&data)).map_err(io)?;
    let points: usize = data.charts.iter().map(|c| c.points()).sum();
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({
            "path": path,
            "charts": data.charts.iter().map(|c| serde_json::json!({"id": c.id, "points": c.points()})).collect::<Vec<_>>(),
            "chains": data.chains.len(),
            "curation": data.curation.is_some(),
        }));
    } else {
        ctx.out.line(&format!(
            "wrote {} ({} charts, {points} points, {} supersession chains)",
            path.display(),
            data.charts.len(),
            data.chains.len()
        ));
    }
    Ok(())
}
