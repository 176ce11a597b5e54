//! `git neo verify`: prove the memory's integrity; exit 3 with every problem listed when it is not.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Also check every commit in <from>..<to>: records only added, messages well-formed.
    #[arg(long, value_name = "FROM..TO")]
    range: Option<String>,
    /// Output format: text, or github (workflow-command annotations).
    #[arg(long, default_value = "text", value_parser = ["text", "github"])]
    format: String,
}

/// Escape a value for a GitHub Actions workflow command.
fn gh_escape(s: &str, property: bool) -> String {
    let s = s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    if property {
        s.replace(':', "%3A").replace(',', "%2C")
    } else {
        s
    }
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let Some((_, report)) = ctx.session.verify(args.range.as_deref())? else {
        let ref_name = ctx.session.ref_name()?;
        if ctx.out.json {
            ctx.out.json(&serde_json::json!({ "ref_name": ref_name, "records": 0, "problems": [] }));
        } else {
            ctx.out.line(&format!("{ref_name} does not exist: nothing to verify"));
        }
        return Ok(());
    };
    if ctx.out.json {
        ctx.out.json(&report);
    } else if args.format == "github" {
        for p in &report.problems {
            let title = gh_escape(&format!("git-neo verify: {}", p.field), true);
            let file = if p.path.is_empty() { String::new() } else { format!("file={},", gh_escape(&p.path, true)) };
            ctx.out.line(&format!("::error {file}title={title}::{}", gh_escape(&p.message, false)));
        }
        for n in &report.notes {
            ctx.out.line(&format!("::notice title=git-neo verify::{}", gh_escape(n, false)));
        }
        ctx.out.line(&format!(
            "git-neo verify: {} records, {} commits, {} problems",
            report.records,
            report.commits_checked,
            report.problems.len()
        ));
    } else {
        for p in &report.problems {
            let at = p.commit.as_deref().map(|c| format!(" (commit {})", &c[..12])).unwrap_or_default();
            // A path, a field and a message can quote a tree entry's name or a commit's text,
            // which anyone who pushed can choose: each is one escaped line, so none can forge
            // another line of this report.
            let path = if p.path.is_empty() { "memory" } else { &p.path };
            let e = git_neo::display::escape;
            ctx.out.line(&format!("{}: {}: {}{at}", e(path), e(&p.field), e(&p.message)));
        }
        for n in &report.notes {
            ctx.out.line(&format!("note: {}", git_neo::display::escape(n)));
        }
        let verdict = if report.is_clean() { "ok".to_string() } else { format!("{} problems", report.problems.len()) };
        let copies = match report.copies.len() {
            0 => String::new(),
            1 => format!(" and {}", report.copies[0]),
            n => format!(" and {n} remote-tracking copies"),
        };
        ctx.out.line(&format!(
            "verified {} at {}{copies}: {} records{}, {verdict}",
            report.ref_name,
            &report.commit[..12],
            report.records,
            if report.commits_checked > 0 { format!(", {} commits", report.commits_checked) } else { String::new() }
        ));
    }
    if !report.is_clean() {
        ctx.exit = Some(super::EXIT_INTEGRITY);
    }
    Ok(())
}
