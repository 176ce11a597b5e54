//! `git neo install-man-pages [DIR]`: man pages generated from the clap definitions, so that
//! `git neo --help` (which git turns into `man git-neo`) and `git help neo` work. By default they
//! go beside the binary's prefix (`<prefix>/bin/git-neo` -> `<prefix>/share/man/man1`), where
//! man-db looks for every directory on `PATH` without any MANPATH. The synopses are written here,
//! not by clap_mangen, so that every option shows the value it takes.

use super::Ctx;
use clap::CommandFactory;
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the pages (default: `../share/man/man1` beside the directory this binary is
    /// in, e.g. ~/.cargo/share/man/man1 for ~/.cargo/bin/git-neo, which man finds from PATH).
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Every page: `git-neo.1`, `git-neo-help.1`, and one `git-neo-<command>.1` per command
/// (sub-subcommands included).
pub fn pages() -> Result<Vec<(String, Vec<u8>)>, Error> {
    // Built first, so that clap has added its `help` subcommand and spread the global options.
    let mut root = super::Cli::command();
    root.build();
    let mut out = Vec::new();
    // (file name, how it is typed, the command)
    let mut stack = vec![("git-neo".to_string(), "git neo".to_string(), root)];
    while let Some((name, typed, cmd)) = stack.pop() {
        let top = typed == "git neo";
        for sub in cmd.get_subcommands() {
            // `git neo help` gets a page of its own; each subcommand's `help` repeats it.
            if sub.get_name() != "help" || top {
                stack.push((format!("{name}-{}", sub.get_name()), format!("{typed} {}", sub.get_name()), sub.clone()));
            }
        }
        let mut cmd = cmd.name(name.clone()).bin_name(typed);
        cmd.build();
        let mut bytes = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .render(&mut bytes)
            .map_err(|e| Error::Io { context: format!("rendering the man page {name}.1"), source: e })?;
        out.push((format!("{name}.1"), with_synopsis(&bytes, &cmd)));
    }
    out.sort();
    Ok(out)
}

/// Escape text for roff: backslashes and hyphens (a plain `-` may print as a hyphen, not a minus).
fn roff_escape(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// The SYNOPSIS line of `cmd`: every visible option with the value it takes, then the
/// positionals, then the subcommand.
fn synopsis(cmd: &clap::Command) -> String {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = format!("\\fB{}\\fR", roff_escape(name));
    let value = |a: &clap::Arg| -> String {
        let names: Vec<String> = match a.get_value_names() {
            Some(v) => v.iter().map(|n| n.to_string()).collect(),
            None => vec![a.get_id().as_str().to_uppercase()],
        };
        format!("\\fI{}\\fR", roff_escape(&names.join(" ")))
    };
    let repeats = |a: &clap::Arg| {
        matches!(a.get_action(), clap::ArgAction::Append | clap::ArgAction::Count)
            || a.get_num_args().is_some_and(|n| n.max_values() > 1)
    };
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set() && !a.is_positional()) {
        let flag = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff_escape(l)),
            (Some(s), None) => format!("\\fB\\-{s}\\fR"),
            (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff_escape(l)),
            (None, None) => continue,
        };
        let takes = a.get_num_args().is_some_and(|n| n.takes_values());
        let body = if takes { format!("{flag} {}", value(a)) } else { flag };
        let more = if repeats(a) { "..." } else { "" };
        if a.is_required_set() {
            line.push_str(&format!(" {body}{more}"));
        } else {
            line.push_str(&format!(" [{body}]{more}"));
        }
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let more = if repeats(a) { "..." } else { "" };
        if a.is_required_set() {
            line.push_str(&format!(" <{}>{more}", value(a)));
        } else {
            line.push_str(&format!(" [{}]{more}", value(a)));
        }
    }
    if cmd.has_subcommands() {
        let required = cmd.is_subcommand_required_set();
        line.push_str(if required { " <\\fICOMMAND\\fR>" } else { " [\\fICOMMAND\\fR]" });
    }
    line
}

/// `page` with its SYNOPSIS section replaced by [`synopsis`].
fn with_synopsis(page: &[u8], cmd: &clap::Command) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let Some(start) = text.find(".SH SYNOPSIS\n") else { return page.to_vec() };
    let body = start + ".SH SYNOPSIS\n".len();
    let end = text[body..].find("\n.SH ").map_or(text.len(), |i| body + i + 1);
    format!("{}{}\n{}", &text[..body], synopsis(cmd), &text[end..]).into_bytes()
}

/// `<prefix>/share/man/man1` for a binary at `<prefix>/bin/git-neo`: where man-db looks for the
/// pages of programs it finds on `PATH`.
fn beside_the_binary() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::Io { context: "finding this binary".into(), source: e })?;
    match exe.parent().filter(|d| d.file_name().is_some_and(|n| n == "bin")).and_then(|b| b.parent()) {
        Some(prefix) => Ok(prefix.join("share/man/man1")),
        None => Err(Error::invalid(
            "dir",
            format!(
                "{} is not in a bin/ directory, so there is no prefix to put the pages beside; \
                 name the directory: git neo install-man-pages DIR (one in `manpath`'s list)",
                exe.display()
            ),
        )),
    }
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let dir = match args.dir {
        Some(d) => d,
        None => beside_the_binary()?,
    };
    let io = |e| Error::Io { context: format!("writing man pages to {}", dir.display()), source: e };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let pages = pages()?;
    for (name, bytes) in &pages {
        std::fs::write(dir.join(name), bytes).map_err(io)?;
    }
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "dir": dir, "pages": pages.iter().map(|p| &p.0).collect::<Vec<_>>() }));
    } else {
        ctx.out.line(&format!("wrote {} man pages to {}", pages.len(), dir.display()));
        ctx.out.note(
            "`git neo --help` and `git help neo` read them: man looks in ../share/man beside every directory on PATH",
        );
    }
    Ok(())
}
