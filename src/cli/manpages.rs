//! `git neo install-man-pages [DIR]`: man pages generated from the clap definitions, so that
//! `git neo --help` (which git turns into `man git-neo`) and `git help neo` work.

use super::Ctx;
use clap::CommandFactory;
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the pages (default: ~/.local/share/man/man1, which man finds for programs
    /// installed in ~/.local/bin or ~/.cargo/bin once it is in MANPATH).
    dir: Option<PathBuf>,
}

/// Every page: `git-neo.1` and one `git-neo-<command>.1` per command (sub-subcommands included).
pub fn pages() -> Result<Vec<(String, Vec<u8>)>, Error> {
    let root = super::Cli::command();
    let mut out = Vec::new();
    // (file name, how it is typed, the command)
    let mut stack = vec![("git-neo".to_string(), "git neo".to_string(), root)];
    while let Some((name, typed, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                stack.push((format!("{name}-{}", sub.get_name()), format!("{typed} {}", sub.get_name()), sub.clone()));
            }
        }
        let cmd = cmd.name(name.clone()).bin_name(typed);
        let mut bytes = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut bytes)
            .map_err(|e| Error::Io { context: format!("rendering the man page {name}.1"), source: e })?;
        out.push((format!("{name}.1"), bytes));
    }
    out.sort();
    Ok(out)
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".local/share/man/man1"))
            .ok_or_else(|| {
                Error::invalid("dir", "HOME is not set; name the directory: git neo install-man-pages DIR")
            })?,
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
        ctx.out.note("`git neo --help` and `git help neo` read them once that directory is in man's search path");
    }
    Ok(())
}
