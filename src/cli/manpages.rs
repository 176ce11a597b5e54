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
            // Hidden commands (the completion's id lookup) get no page.
            if (sub.get_name() != "help" || top) && !sub.is_hide_set() {
                stack.push((format!("{name}-{}", sub.get_name()), format!("{typed} {}", sub.get_name()), sub.clone()));
            }
        }
        let mut cmd = cmd.name(name.clone()).bin_name(typed);
        cmd.build();
        let mut bytes = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .render(&mut bytes)
            .map_err(|e| Error::Io { context: format!("rendering the man page {name}.1"), source: e })?;
        let mut page = with_synopsis(&bytes, &cmd);
        page.extend_from_slice(common_sections(top).as_bytes());
        out.push((format!("{name}.1"), page));
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

/// EXIT STATUS on every page; ENVIRONMENT and EXAMPLES (the README's tour, shortened) on the
/// top page.
fn common_sections(top: bool) -> String {
    let mut s = String::from(
        ".SH \"EXIT STATUS\"\n\
         .TP\n0\nSuccess.\n\
         .TP\n1\nInvalid input or a refused request, naming the field and the fix; nothing was written.\n\
         .TP\n2\nA command line the parser refused (an unknown option, a missing argument).\n\
         .TP\n3\nIntegrity: the memory on the ref is damaged, or \\fBverify\\fR found problems.\n\
         .TP\n4\nConflict: the ref's lock stayed held, or other writers kept winning the race.\n\
         .TP\n5\nEnvironment: git or the file system failed, the network timed out, a remote refused a push.\n\
         .PP\nWith \\fB\\-\\-json\\fR, every failure is also one JSON object on stdout: category, kind, message, field, exit.\n",
    );
    if !top {
        return s;
    }
    let vars: [(&str, &str); 18] = [
        (
            "GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL",
            "who writes (else git config user.name and user.email of this repository, then the global one)",
        ),
        ("GIT_DIR, GIT_WORK_TREE", "the repository and work tree, as git takes them"),
        ("GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT", "git -c settings passed down by git, applied as overrides"),
        ("GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM", "which configuration files git reads"),
        ("GIT_NEO_NOW", "the clock, an RFC 3339 UTC time (for reproducible scripts and tests)"),
        ("GIT_NEO_EMBEDDER", "the embedder: model (default), hash (deterministic, for tests) or none"),
        ("GIT_NEO_CACHE_DIR", "where the embedding model and ONNX Runtime are (else $XDG_CACHE_HOME/git\\-neo)"),
        ("XDG_CACHE_HOME", "the cache directory's base"),
        ("GIT_NEO_DATA_DIR", "the data directory: the user memory and the org cache (else $XDG_DATA_HOME/git\\-neo)"),
        ("XDG_DATA_HOME", "the data directory's base"),
        ("HOME", "the base of both when the XDG variables are unset"),
        ("GIT_NEO_DAEMON", "off: never use or start the background server"),
        ("GIT_NEO_DAEMON_IDLE", "seconds a background server waits for a command before it exits (default 600)"),
        (
            "GIT_NEO_DAEMON_TIMEOUT",
            "seconds a command waits for the server's answer before it runs by itself (default 10)",
        ),
        ("XDG_RUNTIME_DIR", "where the server's socket lives (else /tmp/git\\-neo\\-<uid>)"),
        (
            "GLIBC_TUNABLES",
            "kept for the background server, with glibc.malloc.hugetlb=1 added unless it names that setting (huge pages while the model loads)",
        ),
        ("NO_COLOR", "no colour in any output"),
        ("SHELL", "the shell completions install for, when none is named"),
    ];
    s.push_str(".SH ENVIRONMENT\n");
    for (name, what) in vars {
        s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff_escape(name), what));
    }
    s.push_str(
        ".SH EXAMPLES\n.nf\n\
         git neo add \\-\\-type constraint \\-\\-subject \"Never call the payments API from tests\"\n\
         git neo add \\-\\-type decision \\-\\-subject \"Deploys go to Fly.io\" \\-\\-key deploy.target\n\
         git neo recall \"add a refund endpoint to payments\"\n\
         git neo list \\-\\-type constraint \\-\\-json\n\
         git neo forget 7bed \\-\\-reason \"fixed upstream in 2.1\"\n\
         git neo verify && git neo diff neo\\-memory~3\n\
         git neo init \\-\\-ci github \\-\\-install\\-version 0.1.0 && git neo sync\n\
         git neo setup claude\\-code\n\
         .fi\n",
    );
    s
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
