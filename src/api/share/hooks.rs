//! Use case: `git neo hooks install|uninstall`, the post-commit and post-merge hooks that run an
//! outcome scan in the background. Install adds a marked block (creating the hook if needed) and
//! uninstall removes exactly that block, so a person's own hooks are never lost.

use crate::error::{Error, Result};
use crate::store::Store;
use serde::Serialize;
use std::path::PathBuf;

const BEGIN: &str = "# >>> git-neo outcomes >>>";
const END: &str = "# <<< git-neo outcomes <<<";
const SHEBANG: &str = "#!/bin/sh\n";
const HOOKS: [&str; 2] = ["post-commit", "post-merge"];

fn block() -> String {
    format!(
        "{BEGIN}\n# Added by `git neo hooks install`; `git neo hooks uninstall` removes it.\n\
         # Runs in the background so the commit is never slowed or failed by it.\n\
         (git-neo outcomes --quiet >/dev/null 2>&1 &) >/dev/null 2>&1 || true\n{END}\n"
    )
}

/// What happened to one hook file.
#[derive(Clone, Debug, Serialize)]
pub struct HookChange {
    pub hook: &'static str,
    pub path: PathBuf,
    pub action: &'static str,
}

fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io { context: format!("updating {}", path.display()), source: e }
}

/// Apply `change(path, current text)` to each hook file, collecting what it did.
fn each_hook(
    store: &Store,
    mut change: impl FnMut(&std::path::Path, Option<String>) -> Result<&'static str>,
) -> Result<Vec<HookChange>> {
    let dir = store.hooks_dir();
    let mut out = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let action = change(&path, std::fs::read_to_string(&path).ok())?;
        out.push(HookChange { hook, path, action });
    }
    Ok(out)
}

/// Add git-neo's block to each hook (idempotent).
pub fn install(store: &Store) -> Result<Vec<HookChange>> {
    each_hook(store, |path, existing| {
        let io = io(path);
        let action = match existing {
            Some(text) if text.contains(BEGIN) => "already installed",
            Some(text) => {
                let sep = if text.ends_with('\n') || text.is_empty() { "" } else { "\n" };
                std::fs::write(path, format!("{text}{sep}{}", block())).map_err(&io)?;
                "added to your hook"
            }
            None => {
                std::fs::create_dir_all(path.parent().unwrap_or(path)).map_err(&io)?;
                std::fs::write(path, format!("{SHEBANG}{}", block())).map_err(&io)?;
                "created"
            }
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mut perms = std::fs::metadata(path).map_err(&io)?.permissions();
            perms.set_mode(perms.mode() | 0o755);
            std::fs::set_permissions(path, perms).map_err(&io)?;
        }
        Ok(action)
    })
}

/// Remove git-neo's block from each hook, deleting a hook that held nothing else.
pub fn uninstall(store: &Store) -> Result<Vec<HookChange>> {
    each_hook(store, |path, existing| {
        let io = io(path);
        Ok(match existing {
            Some(text) if text.contains(BEGIN) => {
                let (before, rest) = text.split_once(BEGIN).unwrap_or((&text, ""));
                let after = rest.split_once(END).map(|(_, a)| a.strip_prefix('\n').unwrap_or(a)).unwrap_or("");
                let kept = format!("{before}{after}");
                if kept == SHEBANG || kept.trim().is_empty() {
                    std::fs::remove_file(path).map_err(&io)?;
                    "removed"
                } else {
                    std::fs::write(path, kept).map_err(&io)?;
                    "removed git-neo's part; your hook stays"
                }
            }
            _ => "not installed",
        })
    })
}
