//! Opening each scope's memory (see [`crate::scope`] and docs/scopes.md): the project ref, the
//! person's own repository, the org cache and its remote, session refs; which scopes a recall
//! reads; and what `git neo scopes` reports about each.

use crate::config;
use crate::error::{Error, Result};
use crate::record::Timestamp;
use crate::scope::{self, Scope};
use crate::store::{Maintenance, Store, StoreOptions, WriteMode};
use std::path::{Path, PathBuf};

/// The remote name a user or org memory repository shares through.
pub const REMOTE: &str = "origin";

/// Where the scopes are, as the front end found them (the data directory comes from its
/// environment: the library never reads it).
#[derive(Clone, Debug)]
pub struct Places {
    /// A directory inside the project repository.
    pub dir: PathBuf,
    /// The project's git directory when the caller named it ([`StoreOptions::git_dir`]).
    pub git_dir: Option<PathBuf>,
    /// The project memory ref (`--ref`).
    pub ref_name: Option<String>,
    /// `<data dir>/git-neo`, where the user memory and org caches live; `None` when the
    /// environment names no data directory (then only project and session scopes exist).
    pub data_dir: Option<PathBuf>,
    /// The caller's command-line git configuration ([`StoreOptions::config`]).
    pub config: Vec<String>,
    /// When git's housekeeping after a write runs ([`StoreOptions::maintenance`]).
    pub maintenance: Maintenance,
}

impl Places {
    /// The project's store.
    pub fn project(&self) -> Result<Store> {
        Store::discover(
            &self.dir,
            StoreOptions { ref_name: self.ref_name.clone(), git_dir: self.git_dir.clone(), ..self.store_options() },
        )
    }

    /// Store options carrying only the caller's configuration (every other setting read from
    /// git config).
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions { config: self.config.clone(), maintenance: self.maintenance, ..Default::default() }
    }

    fn data_dir(&self, scope: &Scope) -> Result<&Path> {
        self.data_dir.as_deref().ok_or_else(|| Error::Environment {
            variable: "XDG_DATA_HOME".into(),
            message: format!(
                "no data directory is known, so the {scope} memory has no home; set XDG_DATA_HOME or HOME"
            ),
        })
    }

    /// Where `scope` lives: a repository path (and for a session, its ref).
    pub fn location(&self, scope: &Scope) -> Result<String> {
        Ok(match scope {
            Scope::Project => {
                let p = self.project()?;
                format!("{} {}", p.common_dir().display(), p.ref_name())
            }
            Scope::Session(_) => {
                let p = self.project()?;
                format!("{} {}", p.common_dir().display(), scope.session_ref().unwrap_or_default())
            }
            Scope::User => scope::user_repository(self.data_dir(scope)?).display().to_string(),
            Scope::Org => {
                let url = self.org_url(&self.project()?)?;
                format!("{} (cache of {url})", scope::org_cache(self.data_dir(scope)?, &url).display())
            }
        })
    }

    /// The org memory's URL: `neo.org.url` (or the convention with `auto`).
    pub fn org_url(&self, project: &Store) -> Result<String> {
        let Some(url) = project.config_value(config::ORG_URL).map(|u| u.trim().to_string()) else {
            return Err(Error::Config {
                key: config::ORG_URL.into(),
                message: "is not set, so there is no org memory; `git config neo.org.url <url>` names the team's \
                          memory repository (or `auto` for <origin's owner>/neo-memory.git)"
                    .into(),
            });
        };
        if url != "auto" {
            return Ok(url);
        }
        let origin = project.remote_url("origin").ok_or_else(|| Error::Config {
            key: config::ORG_URL.into(),
            message: "is auto, which needs an origin remote to take the owner from; set the URL itself".into(),
        })?;
        scope::org_url_by_convention(&origin).ok_or_else(|| Error::Config {
            key: config::ORG_URL.into(),
            message: format!("is auto, but the origin URL {origin:?} has no owner to put neo-memory.git under"),
        })
    }

    /// Whether the org memory is configured for this project.
    pub fn org_configured(&self, project: &Store) -> bool {
        project.config_value(config::ORG_URL).is_some_and(|v| !v.trim().is_empty())
    }

    /// Open `scope`'s store. With `create`, a missing user repository or org cache is made (an
    /// empty cache is harmless: it is filled by the next fetch); without, `None` when it is missing.
    pub fn open(&self, scope: &Scope, create: bool) -> Result<Option<Store>> {
        match scope {
            Scope::Project => self.project().map(Some),
            Scope::Session(_) => {
                let name = scope.session_ref().unwrap_or_default();
                self.project()?.with_ref(&name).map(Some)
            }
            Scope::User => {
                let path = scope::user_repository(self.data_dir(scope)?);
                let Some(store) = Store::open_at(&path, self.store_options(), create)? else { return Ok(None) };
                // The person's own memory may follow them between machines through a remote.
                if let Some(url) = store.config_value(config::USER_URL).filter(|u| !u.trim().is_empty()) {
                    store.set_remote_url(REMOTE, url.trim())?;
                }
                Ok(Some(store))
            }
            Scope::Org => {
                let project = self.project()?;
                let url = self.org_url(&project)?;
                let mode = match project.config_value(config::ORG_MODE) {
                    Some(v) => WriteMode::parse(config::ORG_MODE, &v)?,
                    None => WriteMode::Review,
                };
                let path = scope::org_cache(self.data_dir(scope)?, &url);
                let opts = StoreOptions { mode: Some(mode), ..self.store_options() };
                let Some(store) = Store::open_at(&path, opts, create)? else { return Ok(None) };
                store.set_remote_url(REMOTE, &url)?;
                Ok(Some(store))
            }
        }
    }

    /// The scopes a recall reads besides the project: the user memory if it exists, the org
    /// cache if it is configured and was made, and every session of this clone.
    pub fn readable(&self) -> Result<Vec<Scope>> {
        self.readable_from(&self.project()?)
    }

    /// [`Places::readable`] with the project's store already open. Every recall asks, so it
    /// looks only at refs and at whether the repositories are there (a few file checks), and
    /// opens nothing.
    pub fn readable_from(&self, project: &Store) -> Result<Vec<Scope>> {
        let mut out = vec![Scope::Project];
        for (name, _) in project.refs_with_prefix(scope::SESSION_REF_PREFIX)? {
            if let Some(s) = name.strip_prefix(scope::SESSION_REF_PREFIX) {
                if scope::check_session_name(s).is_ok() {
                    out.push(Scope::Session(s.to_string()));
                }
            }
        }
        let is_repository = |p: PathBuf| p.join("HEAD").is_file();
        if let (true, Some(data)) = (self.org_configured(project), self.data_dir.as_deref()) {
            if self.org_url(project).is_ok_and(|url| is_repository(scope::org_cache(data, &url))) {
                out.push(Scope::Org);
            }
        }
        if self.data_dir.as_deref().is_some_and(|d| is_repository(scope::user_repository(d))) {
            out.push(Scope::User);
        }
        Ok(out)
    }

    /// The session `git neo session start` made current in this worktree, if any.
    pub fn current_session(&self) -> Option<String> {
        let project = self.project().ok()?;
        session_named_in(project.git_dir())
    }

    /// Parse a `--scope` value (`session` alone is the current session).
    pub fn parse(&self, value: &str) -> Result<Scope> {
        Scope::parse(value, self.current_session().as_deref()).map_err(|m| Error::invalid("scope", m))
    }
}

/// The session current in the worktree whose own git directory is `git_dir`, if any.
pub fn session_named_in(git_dir: &std::path::Path) -> Option<String> {
    let name = std::fs::read_to_string(crate::layout::current_session(git_dir)).ok()?;
    let name = name.trim();
    scope::check_session_name(name).is_ok().then(|| name.to_string())
}

/// When the org or user cache last fetched (the time of its fetch stamp), if ever.
pub fn last_fetch(store: &Store) -> Option<Timestamp> {
    let meta = std::fs::metadata(store.caches().fetched()).ok()?;
    let t = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(Timestamp(t.as_secs() as i64))
}

/// Record a successful fetch (see [`last_fetch`]).
pub fn stamp_fetch(store: &Store) -> Result<()> {
    let path = store.caches().fetched();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io { context: format!("creating {}", dir.display()), source: e })?;
    }
    std::fs::write(&path, b"").map_err(|e| Error::Io { context: format!("writing {}", path.display()), source: e })
}

/// How long one background fetch is given before another caller may start one.
pub const FETCH_CLAIM_SECS: u64 = 300;

/// Claim the next background fetch of `store`'s memory: true for the first caller in
/// [`FETCH_CLAIM_SECS`] (by the modification time of a marker, on the system clock: this is
/// about processes, not about memory's time).
pub fn claim_fetch(store: &Store) -> bool {
    let marker = store.caches().fetch_claim();
    let recent = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() < FETCH_CLAIM_SECS);
    if recent {
        return false;
    }
    let _ = std::fs::create_dir_all(store.caches().root());
    std::fs::write(&marker, b"").is_ok()
}

/// Why the cache's last fetch was refused, if it was.
pub fn refused(store: &Store) -> Option<String> {
    std::fs::read_to_string(store.caches().refused()).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Remember (or, with `None`, forget) why the last fetch was refused.
pub fn set_refused(store: &Store, why: Option<&str>) -> Result<()> {
    let path = store.caches().refused();
    match why {
        None if path.exists() => std::fs::remove_file(&path)
            .map_err(|e| Error::Io { context: format!("removing {}", path.display()), source: e }),
        None => Ok(()),
        Some(why) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::Io { context: format!("creating {}", dir.display()), source: e })?;
            }
            std::fs::write(&path, why)
                .map_err(|e| Error::Io { context: format!("writing {}", path.display()), source: e })
        }
    }
}

/// One line of `git neo scopes`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScopeInfo {
    pub scope: String,
    /// Where it lives (a repository, and the ref for project and session scopes).
    pub location: String,
    pub exists: bool,
    /// The commit its memory is at (the newest tip read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
    /// Records it holds (all kinds).
    pub records: usize,
    /// The remote it shares through, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// When it last fetched (user and org scopes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<Timestamp>,
    /// Whether its remote answered just now (`None`: not asked, or nothing to ask).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    /// Why it could not be read or reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// How writes are taken (`auto`, `review`, `off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<WriteMode>,
}
