//! `git neo completions bash|zsh|fish`: shell completion scripts generated from the clap
//! definitions (clap_complete), so they never fall behind the commands. They complete `git-neo`;
//! the bash script also defines `_git_neo`, which git's own bash completion calls for `git neo …`.

use super::Ctx;
use clap::builder::{PossibleValue, TypedValueParser};
use clap::CommandFactory;
use git_neo::Error;

/// Fact types, as `--type` takes them.
pub const FACT_TYPES: &[&str] =
    &["constraint", "architecture", "pattern", "review", "decision", "known-unknown", "failure"];
/// Provenances, as `--provenance` takes them.
pub const PROVENANCES: &[&str] = &["structural", "observed", "inferred"];
/// What `import --from` reads.
pub const IMPORT_FORMATS: &[&str] =
    &["jsonl", "csv", "neo", "beads", "agents-md", "claude-md", "cursor-rules", "copilot", "memory-md"];
/// The agents `setup` configures.
pub const SETUP_TARGETS: &[&str] = &["claude-code", "cursor", "codex", "gemini", "copilot", "agents-md"];
/// The scopes `--scope` names (`session:<name>` for another session).
pub const SCOPES: &[&str] = &["project", "user", "org", "session"];

/// A value parser that offers `values` to shell completion (and lists them in `--help`) but
/// takes any string: the library checks the value and, when it is wrong, names the field and
/// the fix with exit 1, as for every other bad input (a parser error would be a usage error).
#[derive(Clone)]
pub struct Offer(pub &'static [&'static str]);

impl TypedValueParser for Offer {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| PossibleValue::new(*v))))
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The shell to write the script for.
    #[arg(value_enum, value_name = "SHELL")]
    shell: Shell,
}

#[derive(clap::Args)]
pub struct IdsArgs {
    /// The start of the id being typed.
    #[arg(default_value = "")]
    prefix: String,
}

/// Print the 12-hex-digit ids of the records starting with `prefix` (at most 200), for the bash
/// completion of the commands that take a record id.
pub fn ids(ctx: &mut Ctx, args: IdsArgs) -> Result<(), Error> {
    let prefix = args.prefix.to_ascii_lowercase();
    if !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(());
    }
    let filter = git_neo::api::ListFilter { all: true, ..Default::default() };
    let mut ids: Vec<String> = ctx
        .session
        .list(&filter)?
        .iter()
        .map(|e| e.id.to_hex())
        .filter(|h| h.starts_with(&prefix))
        .map(|h| h[..12].to_string())
        .collect();
    ids.sort();
    ids.dedup();
    for id in ids.iter().take(200) {
        ctx.out.line(id);
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// git's bash completion (`git-completion.bash`) completes `git neo …` by calling `_git_neo` with
/// the whole line in `COMP_WORDS` (`git neo add …`); clap's function expects the line as
/// `git-neo add …`, so this shim re-indexes the words and hands over.
const GIT_SHIM: &str = r#"
# `git neo <TAB>` through git's own completion: re-index the line as `git-neo …`.
_git_neo() {
    local COMP_WORDS=("git-neo" "${COMP_WORDS[@]:2}")
    local COMP_CWORD=$((COMP_CWORD - 1))
    local prev=""
    if [[ $COMP_CWORD -gt 0 ]]; then prev="${COMP_WORDS[COMP_CWORD-1]}"; fi
    _git__neo_ids git-neo "${COMP_WORDS[COMP_CWORD]}" "$prev"
}

# Record ids for the commands that take one, asked of git-neo itself (`git neo show 3f<TAB>`).
_git__neo_ids() {
    _git__neo "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}"
    case "${COMP_WORDS[1]}" in
        show|forget|outdated|revert|history|explain|recheck)
            if [[ "$cur" != -* && $COMP_CWORD -ge 2 && "${COMP_WORDS[COMP_CWORD-1]}" != -* ]]; then
                COMPREPLY=( $(compgen -W "$(git-neo __complete-ids "$cur" 2>/dev/null)" -- "$cur") )
            fi
            ;;
    esac
}
complete -F _git__neo_ids -o nosort -o bashdefault -o default git-neo
"#;

/// `cmd` and every subcommand below it renamed for the binary `bin` (`git-neo recall`, …).
fn named(cmd: clap::Command, bin: &str) -> clap::Command {
    let cmd = if bin.contains(' ') {
        cmd.bin_name(bin.to_string())
    } else {
        cmd.name(bin.to_string()).bin_name(bin.to_string())
    };
    cmd.mut_subcommands(|sub| {
        let path = format!("{bin} {}", sub.get_name());
        named(sub, &path)
    })
}

/// The completion script for `shell`.
fn script(shell: Shell) -> Vec<u8> {
    // The root is named `git neo` for the help text; a space in the name would make clap_complete
    // name the subcommands' cases one way and look them up another.
    let mut cmd = named(super::Cli::command(), "git-neo");
    let mut out = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "git-neo", &mut out);
    if matches!(shell, Shell::Bash) {
        // clap_complete 4.6 names a subcommand's case from its path with every `-` turned into
        // its subcommand separator, but looks it up with the binary's `-` turned into `__`: for
        // `git-neo` the two differ (`git__subcmd__neo__subcmd__add` vs `git__neo__subcmd__add`),
        // and no option would complete. Use the lookup's spelling.
        let text = String::from_utf8_lossy(&out).replace("git__subcmd__neo", "git__neo");
        out = text.into_bytes();
        out.extend_from_slice(GIT_SHIM.as_bytes());
    }
    out
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let text = String::from_utf8(script(args.shell))
        .map_err(|_| Error::invalid("shell", "the generated completion script is not UTF-8"))?;
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "shell": format!("{:?}", args.shell).to_lowercase(), "script": text }));
    } else {
        ctx.out.line(text.trim_end());
    }
    Ok(())
}
