//! PURE. Scopes: where a memory lives and who shares it (see docs/scopes.md).
//!
//! - `project`: the memory ref of the current repository (the default);
//! - `user`: a bare repository in the person's data directory, following them everywhere;
//! - `org`: a team's memory repository, kept as a bare cache in the data directory and fetched;
//! - `session:<name>`: an ephemeral ref in the current repository for an agent's working notes.
//!
//! Every scope holds the same records in the same layout; this module names the scopes, parses
//! them, orders them for recall, and places the user and org repositories on disk. Opening them is
//! the store's job, deciding which to read the session's.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a record lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// This repository's memory ref.
    Project,
    /// The person's own memory (`<data dir>/user.git`).
    User,
    /// The team's memory (a cache of `neo.org.url` in `<data dir>/org/`).
    Org,
    /// A working session's scratch ref, `refs/neo/sessions/<name>`.
    Session(String),
}

/// The ref prefix of session scopes.
pub const SESSION_REF_PREFIX: &str = "refs/neo/sessions/";

/// The words `--scope` takes.
pub const EXPECTED: &str = "project, user, org, session:<name> (or session for the current one)";

impl Scope {
    /// Parse `project`, `user`, `org`, `session:<name>`; `session` alone is the current session,
    /// `current` (`None` when no session was started).
    pub fn parse(s: &str, current: Option<&str>) -> Result<Scope, String> {
        let s = s.trim();
        match s {
            "project" => Ok(Scope::Project),
            "user" => Ok(Scope::User),
            "org" => Ok(Scope::Org),
            "session" => match current {
                Some(name) => Ok(Scope::Session(name.to_string())),
                None => {
                    Err("\"session\" names the current session, and none was started; run `git neo session start`, \
                             or name one: session:<name>"
                        .into())
                }
            },
            _ => match s.strip_prefix("session:") {
                Some(name) => {
                    check_session_name(name)?;
                    Ok(Scope::Session(name.to_string()))
                }
                None => Err(format!(
                    "{s:?} is not a scope; use one of: {EXPECTED}. (A free-form area label such as {s:?} is --area {s})"
                )),
            },
        }
    }

    /// The name shown and written: `project`, `user`, `org`, `session:<name>`.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// Which scope wins when current facts of several scopes share a key: a session's working
    /// notes over the project's memory, the project over the team's, the team over the person's
    /// own (higher wins).
    pub fn priority(&self) -> u8 {
        match self {
            Scope::Session(_) => 3,
            Scope::Project => 2,
            Scope::Org => 1,
            Scope::User => 0,
        }
    }

    /// The memory ref of a session scope (`None` for the others, which use the configured ref).
    pub fn session_ref(&self) -> Option<String> {
        match self {
            Scope::Session(name) => Some(format!("{SESSION_REF_PREFIX}{name}")),
            _ => None,
        }
    }

    /// The area label written into a record of this scope when the writer names none.
    pub fn default_area(&self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Org => "org",
            Scope::Session(_) => "session",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Project => f.write_str("project"),
            Scope::User => f.write_str("user"),
            Scope::Org => f.write_str("org"),
            Scope::Session(n) => write!(f, "session:{n}"),
        }
    }
}

/// A session name: letters, digits, `-`, `_`, `.`, starting with a letter or digit, at most 64.
pub fn check_session_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.contains("..")
        && !name.ends_with(".lock")
        && !name.ends_with('.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a session name; use letters, digits, - _ . (starting with a letter or digit, at most 64)"
        ))
    }
}

/// Where the person's own memory lives under the data directory.
pub fn user_repository(data_dir: &Path) -> PathBuf {
    data_dir.join("user.git")
}

/// Where the cache of the org memory at `url` lives under the data directory: a readable stem of
/// the URL and a hash of all of it, so two URLs never share a cache.
pub fn org_cache(data_dir: &Path, url: &str) -> PathBuf {
    let url = url.trim();
    let stem: String = url
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .rsplit(['/', ':', '\\'])
        .take(2)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("-")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(48)
        .collect();
    let hash = blake3::hash(url.as_bytes()).to_hex();
    data_dir.join("org").join(format!("{stem}-{}.git", &hash[..12]))
}

/// The org memory by the documented convention (`git config neo.org.url auto`): the origin
/// remote's URL with its last path segment replaced by `neo-memory.git`, so a project at
/// `git@forge:acme/app.git` shares `git@forge:acme/neo-memory.git`. `None` when the URL has no
/// owner segment.
pub fn org_url_by_convention(origin: &str) -> Option<String> {
    let origin = origin.trim().trim_end_matches('/');
    let cut = origin.rfind(['/', ':'])?;
    let owner = &origin[..cut];
    if owner.is_empty() || owner.ends_with(':') || owner.ends_with('/') {
        return None;
    }
    Some(format!("{owner}{}neo-memory.git", &origin[cut..=cut]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_name_themselves() {
        assert_eq!(Scope::parse("user", None), Ok(Scope::User));
        assert_eq!(Scope::parse(" org ", None), Ok(Scope::Org));
        assert_eq!(Scope::parse("session:fix-42", None), Ok(Scope::Session("fix-42".into())));
        assert_eq!(Scope::parse("session", Some("a1")), Ok(Scope::Session("a1".into())));
        assert!(Scope::parse("session", None).unwrap_err().contains("session start"));
        let e = Scope::parse("backend", None).unwrap_err();
        assert!(e.contains("--area backend"), "{e}");
        assert!(Scope::parse("session:../x", None).is_err());
        assert!(Scope::parse("session:a b", None).is_err());
        assert_eq!(Scope::Session("x".into()).to_string(), "session:x");
        assert_eq!(Scope::Session("x".into()).session_ref().as_deref(), Some("refs/neo/sessions/x"));
        assert!(Scope::Project.priority() > Scope::Org.priority() && Scope::Org.priority() > Scope::User.priority());
    }

    #[test]
    fn org_caches_are_apart_per_url_and_the_convention_keeps_the_owner() {
        let d = Path::new("/data/git-neo");
        let a = org_cache(d, "git@forge.example:acme/neo-memory.git");
        let b = org_cache(d, "https://forge.example/acme/neo-memory.git");
        assert_ne!(a, b);
        assert!(a.to_string_lossy().contains("acme-neo-memory-"), "{}", a.display());
        assert_eq!(
            org_url_by_convention("git@forge.example:acme/app.git").as_deref(),
            Some("git@forge.example:acme/neo-memory.git")
        );
        assert_eq!(
            org_url_by_convention("https://forge.example/acme/app").as_deref(),
            Some("https://forge.example/acme/neo-memory.git")
        );
        assert_eq!(org_url_by_convention("app.git"), None);
    }
}
