//! The store: the only module that names gix. It owns the memory ref, its tree layout, reading
//! records back, and the compare-and-swap write path.
//!
//! Layout on the ref (see `docs/format.md`): `FORMAT` (the format version), then one directory per
//! kind, fanned out by the first two hex digits of the id: `facts/3f/3f2a….md`. Writes never touch
//! the work tree, the index or HEAD: they create blobs, trees and a commit, then move the ref with
//! a compare-and-swap, retrying on a race. Reads see the local ref and the remote-tracking copies
//! of it (`refs/remotes/*/neo-memory`), so a fresh clone sees memory it has only fetched.

pub mod forge;
mod freshness;
mod history;
mod purge;
mod read;
mod refs;
mod sync;
mod trust;
// `git` is spawned here (gc, fetch, push): an edge this module owns (clippy.toml).
#[allow(clippy::disallowed_methods)]
mod write;

pub use freshness::{freshness, Freshness};
/// Git object ids, re-exported so callers need not name gix (only `store` does).
pub use gix::ObjectId;
pub use history::{AddedRecord, CodeCommit, CommitInfo, CommitMeta, FileDiff, TreeChange};
pub use purge::{purge_trailers, scrub_texts, Rewrite};
pub use read::{LoadedRecord, Snapshot, StrayEntry, TreeEntry};
pub use sync::{MergeKind, Push};
pub use write::{cleanup_tempfiles_signal_safe, ref_updates_in_flight, Identity, WriteOutcome};

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The ref used when `git config neo.ref` is not set.
pub const DEFAULT_REF: &str = "refs/heads/neo-memory";

pub use crate::config::{LOCK_TIMEOUT as LOCK_TIMEOUT_CONFIG_KEY, MODE as MODE_CONFIG_KEY, REF as REF_CONFIG_KEY};

/// How this repository takes memory writes (`git config neo.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Writes go straight to the memory ref (the default).
    Auto,
    /// Writes go to a local proposals ref; `git neo approve` moves them to the memory ref.
    Review,
    /// Writes are refused.
    Off,
}

impl WriteMode {
    /// `auto`, `review` or `off`, as the value of config `key`.
    pub fn parse(key: &str, value: &str) -> Result<WriteMode> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(WriteMode::Auto),
            "review" => Ok(WriteMode::Review),
            "off" => Ok(WriteMode::Off),
            _ => Err(Error::Config {
                key: key.into(),
                message: format!("{value:?} is not a mode; use auto, review or off"),
            }),
        }
    }
}

/// The content of the `FORMAT` entry.
pub fn format_entry() -> String {
    format!("{}\n", crate::record::FORMAT_VERSION)
}

/// Options for opening a store. Everything has a default; git config can override the ref and the
/// lock timeout, and explicit values here override git config.
#[derive(Clone, Debug, Default)]
pub struct StoreOptions {
    /// The memory ref; `None` reads `neo.ref` from git config, then falls back to [`DEFAULT_REF`].
    pub ref_name: Option<String>,
    /// How long a writer waits for the ref lock; `None` reads `neo.lockTimeout` (ms), default 5 s.
    pub lock_timeout: Option<Duration>,
    /// How writes are taken; `None` reads `neo.mode` from this repository's config (the org
    /// memory's mode comes from the project's `neo.org.mode` instead).
    pub mode: Option<WriteMode>,
    /// The caller's command-line configuration (`git -c key=value`, `GIT_CONFIG_PARAMETERS`,
    /// `GIT_CONFIG_COUNT`…), as `key=value`, applied over every configuration file. The front end
    /// reads it from its environment; the library never reads git's environment variables itself,
    /// so a command run by the background server sees exactly its caller's configuration.
    pub config: Vec<String>,
    /// The git directory the caller named (`GIT_DIR`, `git --git-dir=…`), absolute: opened as
    /// given instead of searching from a directory, exactly as git does. The front end reads it;
    /// a work tree named with `GIT_WORK_TREE` arrives as `core.worktree` in [`Self::config`].
    pub git_dir: Option<std::path::PathBuf>,
    /// When git's housekeeping after a write runs (see [`Maintenance`]).
    pub maintenance: Maintenance,
}

/// When `git gc --auto` runs after a write that crosses git's thresholds (about every 1,400
/// one-fact writes, and after 50 packs). Either way git decides whether there is work and
/// nothing written is ever at stake; only who waits for it differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Maintenance {
    /// Inside the write, before it returns: a one-shot command (an import) ends with its
    /// objects packed, and what it leaves behind is exactly what it did.
    #[default]
    Inline,
    /// git's own default (`gc.autoDetach`): git packs the refs and expires the reflog, then
    /// repacks and prunes in a process of its own while the write returns. For a long-lived
    /// front end (the background server, MCP): a repack inside a request held that request
    /// and every client queued behind it (1.4 to 1.9 s at 10k facts).
    Detached,
}

/// How every repository is opened:
/// - with the caller's command-line configuration on top, and without gix reading
///   `GIT_CONFIG_COUNT` from this process's environment (the front end hands it over as
///   [`StoreOptions::config`], so a server answering for a client uses the client's);
/// - with room for many packs: gix sizes its table of pack indexes once, when the repository is
///   opened (by default 10% over what is on disk, at least 32), and a process that writes more
///   packs than that (an import of tens of thousands of records, a long-lived server) would stop
///   seeing the newest objects ("object could not be found"). Packs here come from large writes,
///   and `gc --auto` folds them together past 50, so 2048 slots are never reached.
fn open_options(mut options: gix::open::Options, config: &[String]) -> gix::open::Options {
    options.permissions.config.env = false;
    options
        .object_store_slots(gix::odb::store::init::Slots::AsNeededByDiskState { multiplier: 2.0, minimum: 2048 })
        .cli_overrides(config.iter().map(String::as_str))
}

/// An open repository and the memory ref within it.
pub struct Store {
    repo: gix::Repository,
    ref_name: gix::refs::FullName,
    lock_timeout: Duration,
    mode: WriteMode,
    maintenance: Maintenance,
}

impl Store {
    /// Find the repository containing `dir` (a work tree, a linked worktree or a bare repository).
    pub fn discover(dir: &Path, options: StoreOptions) -> Result<Store> {
        if let Some(git_dir) = options.git_dir.clone() {
            let repo = gix::open_opts(&git_dir, open_options(gix::open::Options::default(), &options.config))
                .map_err(|e| Error::NotARepository { path: git_dir.clone(), source: Box::new(e) })?;
            return Store::from_repo(repo, options);
        }
        let mut trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
        for level in [&mut trust.full, &mut trust.reduced] {
            level.modify(|o| open_options(o, &options.config));
        }
        let repo = gix::ThreadSafeRepository::discover_opts(dir, Default::default(), trust)
            .map_err(|e| Error::NotARepository { path: dir.to_path_buf(), source: Box::new(e) })?;
        Store::from_repo(repo.into(), options)
    }

    /// Open the repository at exactly `path` (a user or org memory, usually bare); with `create`,
    /// make a bare repository there first when there is none. `None` when there is none and
    /// `create` is false.
    pub fn open_at(path: &Path, options: StoreOptions, create: bool) -> Result<Option<Store>> {
        if !path.exists() {
            if !create {
                return Ok(None);
            }
            Store::init_bare_atomically(path)?;
        }
        let repo = gix::open_opts(path, open_options(gix::open::Options::default(), &options.config))
            .map_err(|e| Error::NotARepository { path: path.to_path_buf(), source: Box::new(e) })?;
        Store::from_repo(repo, options).map(Some)
    }

    /// Make a bare repository at `path` beside it first, then move it into place: processes
    /// creating the same memory at the same moment never see a half-made one (the one whose
    /// rename loses uses the winner's).
    fn init_bare_atomically(path: &Path) -> Result<()> {
        let parent = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::Io { context: format!("creating {}", parent.display()), source: e })?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
        gix::init_bare(&temp).map_err(|e| Error::Git {
            context: format!("creating the memory repository {}", path.display()),
            source: Box::new(e),
        })?;
        if std::fs::rename(&temp, path).is_err() {
            let _ = std::fs::remove_dir_all(&temp);
            if !path.join("HEAD").is_file() {
                return Err(Error::Io {
                    context: format!("creating the memory repository {}", path.display()),
                    source: std::io::Error::other("another process holds the path, and it is no repository"),
                });
            }
        }
        Ok(())
    }

    /// The same repository with another memory ref (a session's), in auto mode.
    pub fn with_ref(&self, name: &str) -> Result<Store> {
        Ok(Store {
            repo: self.repo.clone(),
            ref_name: parse_ref_name(name)?,
            lock_timeout: self.lock_timeout,
            mode: WriteMode::Auto,
            maintenance: self.maintenance,
        })
    }

    fn from_repo(mut repo: gix::Repository, options: StoreOptions) -> Result<Store> {
        // Writes read the tip's trees again and again (a warm session writes many times): keep
        // recently decoded objects instead of resolving the same pack deltas on every write.
        repo.object_cache_size_if_unset(4 << 20);
        // The memory ref always gets a reflog (an audit trail of every move), also in bare
        // repositories where git's default is none, unless core.logAllRefUpdates says otherwise.
        if repo.config_snapshot().boolean("core.logAllRefUpdates").is_none() {
            repo.refs.write_reflog = gix::refs::store::WriteReflog::Normal;
        }
        let config = repo.config_snapshot();
        let name = match options.ref_name {
            Some(n) => n,
            None => config.string(REF_CONFIG_KEY).map(|s| s.to_string()).unwrap_or_else(|| DEFAULT_REF.to_string()),
        };
        let ref_name = parse_ref_name(&name)?;
        let lock_timeout = match options.lock_timeout {
            Some(t) => t,
            None => match config.string(LOCK_TIMEOUT_CONFIG_KEY) {
                None => Duration::from_secs(5),
                Some(v) => {
                    let ms: u64 = v.to_string().trim().parse().map_err(|_| Error::Config {
                        key: LOCK_TIMEOUT_CONFIG_KEY.into(),
                        message: format!("{v:?} is not a whole number of milliseconds"),
                    })?;
                    Duration::from_millis(ms)
                }
            },
        };

        let mode = match (options.mode, config.string(MODE_CONFIG_KEY)) {
            (Some(m), _) => m,
            (None, None) => WriteMode::Auto,
            (None, Some(v)) => WriteMode::parse(MODE_CONFIG_KEY, &v.to_string())?,
        };
        Ok(Store { repo, ref_name, lock_timeout, mode, maintenance: options.maintenance })
    }

    /// How this repository takes writes (`neo.mode`).
    pub fn write_mode(&self) -> WriteMode {
        self.mode
    }

    /// The local ref holding review-mode proposals for this memory ref:
    /// `refs/neo/proposed/<name>` for `refs/<...>/<name>`.
    pub fn proposals(&self) -> Result<Store> {
        let name = self.ref_name().rsplit('/').next().unwrap_or("neo-memory");
        Ok(Store {
            repo: self.repo.clone(),
            ref_name: parse_ref_name(&format!("refs/neo/proposed/{name}"))?,
            lock_timeout: self.lock_timeout,
            mode: WriteMode::Auto,
            maintenance: self.maintenance,
        })
    }

    /// The full name of the memory ref.
    pub fn ref_name(&self) -> &str {
        std::str::from_utf8(self.ref_name.as_bstr()).unwrap_or(DEFAULT_REF)
    }

    /// The repository's common git directory (shared by linked worktrees), where caches live.
    pub fn common_dir(&self) -> &Path {
        self.repo.common_dir()
    }

    /// This worktree's own git directory (`git rev-parse --git-dir`): the common directory in
    /// the main worktree, `<common>/worktrees/<name>` in a linked one.
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Every worktree of the repository as (work tree root, its own git directory): the main one
    /// first (when the repository is not bare), then each linked one that still exists, read from
    /// `<common>/worktrees/*/gitdir` the way git records them.
    pub fn worktrees(&self) -> Vec<(PathBuf, PathBuf)> {
        // From a linked worktree gix names the common directory relative to its own
        // (`…/worktrees/<name>/../..`): resolve it before asking for its name.
        let common = std::fs::canonicalize(self.common_dir()).unwrap_or_else(|_| self.common_dir().to_path_buf());
        let common = common.as_path();
        let mut out = Vec::new();
        if !self.repo.is_bare() {
            if let Some(main) = common.parent().filter(|_| common.file_name().is_some_and(|n| n == ".git")) {
                out.push((main.to_path_buf(), common.to_path_buf()));
            } else if let Some(w) = self.work_dir().filter(|_| self.git_dir() == self.common_dir()) {
                out.push((w.to_path_buf(), common.to_path_buf()));
            }
        }
        let mut linked: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(common.join("worktrees"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let git_dir = e.path();
                let dot_git = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
                let root = Path::new(dot_git.trim()).parent()?.to_path_buf();
                root.exists().then_some((root, git_dir))
            })
            .collect();
        linked.sort();
        out.extend(linked);
        out
    }

    /// The work tree root, if the repository has one.
    pub fn work_dir(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    /// The commit HEAD points at, if HEAD is born.
    pub fn head_commit(&self) -> Result<Option<gix::ObjectId>> {
        let mut head = self.repo.head().git(|| "reading HEAD".into())?;
        Ok(head.try_peel_to_id().git(|| "resolving HEAD".into())?.map(|id| id.detach()))
    }

    /// The blob id of `path` in HEAD's tree, if HEAD is born and has that file.
    pub fn blob_at_head(&self, path: &str) -> Result<Option<gix::ObjectId>> {
        let Some(head) = self.head_commit()? else { return Ok(None) };
        self.blob_at(head, path)
    }

    /// The blob id of `path` in `commit`'s tree, if it has that file.
    pub fn blob_at(&self, commit: gix::ObjectId, path: &str) -> Result<Option<gix::ObjectId>> {
        let tree = self
            .repo
            .find_commit(commit)
            .git(|| format!("reading commit {commit}"))?
            .tree()
            .git(|| format!("reading the tree of {commit}"))?;
        let entry = tree.lookup_entry_by_path(path).git(|| format!("looking up {path} at {commit}"))?;
        Ok(entry.filter(|e| e.mode().is_blob()).map(|e| e.object_id()))
    }

    /// Every file in HEAD's tree whose path starts with `prefix` (a directory, or a file's whole
    /// path; empty for all), with its blob id, sorted by path. Empty when HEAD is unborn.
    pub fn files_at_head(&self, prefix: &str) -> Result<Vec<(String, gix::ObjectId)>> {
        let Some(head) = self.head_commit()? else { return Ok(Vec::new()) };
        let tree = self.tree_of(head)?;
        let mut out = Vec::new();
        let mut stack = vec![(String::new(), tree)];
        while let Some((dir, id)) = stack.pop() {
            let tree = self.repo.find_tree(id).git(|| format!("reading the tree of {dir:?}"))?;
            for e in tree.iter() {
                let e = e.git(|| format!("decoding the tree of {dir:?}"))?;
                let path = if dir.is_empty() { e.filename().to_string() } else { format!("{dir}/{}", e.filename()) };
                let wanted = prefix.is_empty()
                    || path == prefix
                    || path.starts_with(&format!("{}/", prefix.trim_end_matches('/')))
                    || prefix.starts_with(&format!("{path}/"));
                if !wanted {
                    continue;
                }
                if e.mode().is_tree() {
                    stack.push((path, e.oid().to_owned()));
                } else if e.mode().is_blob() {
                    out.push((path, e.oid().to_owned()));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Hash a work-tree file's bytes as a git blob id, without writing it.
    pub fn hash_blob(&self, bytes: &[u8]) -> Result<gix::ObjectId> {
        gix::objs::compute_hash(self.repo.object_hash(), gix::objs::Kind::Blob, bytes).git(|| "hashing a blob".into())
    }

    /// Resolve a revision (commit-ish) to a commit id.
    pub fn resolve_commit(&self, spec: &str) -> Result<gix::ObjectId> {
        let id = self
            .repo
            .rev_parse_single(spec)
            .map_err(|e| Error::invalid("revision", format!("{spec:?} does not name a commit here: {e}")))?;
        let obj = id.object().git(|| format!("reading {spec}"))?;
        let commit =
            obj.peel_to_commit().map_err(|_| Error::invalid("revision", format!("{spec:?} does not name a commit")))?;
        Ok(commit.id)
    }
}

fn parse_ref_name(name: &str) -> Result<gix::refs::FullName> {
    let bad = |why: &str| Error::Config {
        key: REF_CONFIG_KEY.into(),
        message: format!("{name:?} {why}; use a full ref such as {DEFAULT_REF}"),
    };
    if !name.starts_with("refs/") {
        return Err(bad("is not a full ref name"));
    }
    if name.starts_with("refs/remotes/") || name.starts_with("refs/tags/") {
        return Err(bad("is a remote-tracking or tag ref, which git-neo cannot write"));
    }
    gix::refs::FullName::try_from(name).map_err(|_| bad("is not a valid ref name"))
}

impl Store {
    /// A raw git config value (`None` when unset); [`crate::config`] says what each `neo.*` key means.
    pub fn config_value(&self, key: &str) -> Option<String> {
        self.repo.config_snapshot().string(key).map(|v| v.to_string())
    }

    /// The layout of this repository's `neo/` cache directory.
    pub fn caches(&self) -> crate::layout::CacheDir {
        crate::layout::CacheDir::in_git_dir(self.common_dir())
    }

    /// Where this memory ref's recall indexes live: a session ref has its own, beside the
    /// repository's main ones.
    pub fn index_dir(&self) -> std::path::PathBuf {
        match self.ref_name().strip_prefix(crate::scope::SESSION_REF_PREFIX) {
            Some(name) => self.caches().session_index(name),
            None => self.caches().index(),
        }
    }

    /// The similarity threshold for superseding facts of `fact_type`: `git config
    /// neo.supersede.<type>` (a number from 0.0 to 1.0), else `default`.
    pub fn supersede_threshold(&self, fact_type: crate::record::FactType, default: f32) -> Result<f32> {
        let key = crate::config::supersede_key(fact_type);
        match self.config_value(&key) {
            None => Ok(default),
            Some(v) => crate::config::parse_threshold(&key, &v),
        }
    }

    /// Whether writes supersede by the frame rule (`git config neo.updates.frame`, default true).
    pub fn frame_updates(&self) -> Result<bool> {
        match self.config_value(crate::config::UPDATES_FRAME) {
            None => Ok(true),
            Some(v) => crate::config::parse_bool(crate::config::UPDATES_FRAME, &v),
        }
    }

    /// The directory holding the project's own Construct patterns: `git config neo.construct.dir`
    /// (relative to the work tree root), default `.neo/construct`; `None` in a bare repository.
    pub fn construct_dir(&self) -> Option<std::path::PathBuf> {
        let dir = self
            .config_value(crate::config::CONSTRUCT_DIR)
            .unwrap_or_else(|| crate::config::DEFAULT_CONSTRUCT_DIR.into());
        self.work_dir().map(|w| w.join(dir.trim()))
    }

    /// The outcome scan's caps from git config.
    pub fn outcome_caps(&self) -> Result<crate::config::OutcomeCaps> {
        crate::config::OutcomeCaps::from_config(&|k| self.config_value(k))
    }

    /// The short name of the branch HEAD is on (`None` when detached or unborn).
    pub fn current_branch(&self) -> Option<String> {
        let name = self.repo.head_name().ok().flatten()?;
        Some(name.shorten().to_string())
    }

    /// Where git runs hooks from: `core.hooksPath` (relative to the work tree) or `<git dir>/hooks`.
    pub fn hooks_dir(&self) -> std::path::PathBuf {
        let config = self.repo.config_snapshot();
        match config.string("core.hooksPath").map(|s| std::path::PathBuf::from(s.to_string())) {
            Some(p) if p.is_absolute() => p,
            Some(p) => self.work_dir().map(|w| w.join(&p)).unwrap_or(p),
            None => self.common_dir().join("hooks"),
        }
    }

    /// The identity git config names (`user.name`, `user.email`), if both are set.
    pub fn configured_identity(&self) -> Option<Identity> {
        let config = self.repo.config_snapshot();
        let name = config.string("user.name")?.to_string();
        let email = config.string("user.email")?.to_string();
        (!name.trim().is_empty()).then(|| Identity { name: name.trim().to_string(), email: email.trim().to_string() })
    }
}

/// Attach context to gix results, turning gix's error into [`crate::error::GitError`].
pub(crate) trait GitContext<T> {
    fn git(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<gix::Error>> GitContext<T> for std::result::Result<T, E> {
    fn git(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Git { context: context(), source: Box::new(e.into()) })
    }
}

/// A new git repository in a temporary directory, made with git itself as a user's would be:
/// what the unit tests that write a memory start from.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) fn test_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(dir.path()).status();
    assert!(init.expect("git init").success());
    dir
}
