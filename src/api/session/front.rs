//! The verbs the front ends call that act on one scope's memory or the repository around it:
//! each is one call on the session, which reads the memory (kept warm, read again when a tip
//! moved), decides who writes and when (the identity given, else git config; the session's
//! clock), and hands the use case its inputs.
//!
//! So the CLI, the MCP server and the background server never hold a `Memory` or a `Store`: what
//! the session owns (scope, identity, clock, configuration, warm caches) is applied here once,
//! for every front end alike. `tests/it/boundaries.rs` holds the front ends to it.

use super::Session;
use crate::api::inspect::changes::Changes;
use crate::api::inspect::export::ExportedFact;
use crate::api::learn::attempts::AttemptView;
use crate::api::share::hooks::HookChange;
use crate::api::share::ProposeOutcome;
use crate::api::view::ListFilter;
use crate::api::view::ShownRecord;
use crate::api::view::{LoggedCommit, RecordState};
use crate::api::write::import::ForeignOutcome;
use crate::api::write::import::ImportOutcome;
use crate::api::write::proposals::ReviewOutcome;
use crate::api::write::purge::PurgeOutcome;
use crate::api::write::AddRequest;
use crate::api::write::InitOutcome;
use crate::error::{Error, Result};
use crate::record::RecordId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

impl Session {
    /// The ref the target scope's memory lives on (read without loading the records).
    pub fn ref_name(&self) -> Result<String> {
        Ok(self.store()?.ref_name().to_string())
    }

    /// The project's work tree (`None` in a bare repository).
    pub fn work_dir(&self) -> Result<Option<PathBuf>> {
        Ok(self.project_store()?.work_dir().map(Path::to_path_buf))
    }

    /// Where the project's caches live (`.git/neo`): indexes, telemetry, the report.
    pub fn caches_root(&self) -> Result<PathBuf> {
        Ok(self.project_store()?.caches().root().to_path_buf())
    }

    /// The project's own Construct pattern directory, when run inside a repository with a work
    /// tree (`git config neo.construct.dir`, else `.neo/construct`).
    pub fn construct_dir(&self) -> Option<PathBuf> {
        self.project_store().ok().and_then(|s| s.construct_dir())
    }

    /// The files committed at the project's HEAD, and the paths of the documents ingested into
    /// the target memory (what a glob given to `ingest` may name).
    pub fn ingestible_paths(&mut self) -> Result<Vec<String>> {
        let mut paths: Vec<String> = self.project_store()?.files_at_head("")?.into_iter().map(|(p, _)| p).collect();
        paths.extend(self.memory()?.sources().into_keys());
        Ok(paths)
    }

    /// The full id of the record `prefix` names in the target memory (`field` is named in the
    /// error when none or several match).
    pub fn resolve_id(&mut self, field: &str, prefix: &str) -> Result<RecordId> {
        self.memory()?.resolve(field, prefix)
    }

    /// The records of `ids` the target memory holds, with their derived state, in that order.
    pub fn entries(&mut self, ids: &[RecordId]) -> Result<Vec<RecordState>> {
        let state = self.memory()?.state();
        Ok(ids.iter().filter_map(|id| state.entries.get(id).map(RecordState::from)).collect())
    }

    /// The one-line summary of each of `ids` in the target memory ("" for an id it does not
    /// hold), read in one go: a listing asks for many, and each read of the memory checks its tips.
    pub fn summaries(&mut self, ids: impl IntoIterator<Item = RecordId>) -> Result<HashMap<RecordId, String>> {
        let state = self.memory()?.state();
        Ok(ids
            .into_iter()
            .map(|id| (id, state.entries.get(&id).map(|e| e.record.summary()).unwrap_or_default()))
            .collect())
    }

    /// The tips the target memory was read from (local ref first, then remote-tracking copies),
    /// each as ref name and commit id.
    pub fn tips(&mut self) -> Result<Vec<(String, String)>> {
        Ok(self.memory()?.tips().iter().map(|(n, c)| (n.clone(), c.to_string())).collect())
    }

    /// `git neo init`: create the memory ref holding only `FORMAT`.
    pub fn init(&mut self) -> Result<InitOutcome> {
        let (memory, wc) = self.writing()?;
        memory.init(&wc)
    }

    /// `git neo init --ci`: create the memory ref if needed, then write the forge's CI file
    /// ([`crate::ci`]) into its forge area as one ordinary commit (reviewable like any memory
    /// change). Returns the path and whether a commit was made (`false`: already there, the same).
    pub fn init_ci(&mut self, forge: &str, install: &crate::ci::Install) -> Result<(String, bool)> {
        install.check().map_err(|(field, m)| Error::invalid(field, m))?;
        let (memory, wc) = self.writing()?;
        memory.init(&wc)?;
        let ref_name = memory.store().ref_name().to_string();
        let branch = ref_name.strip_prefix("refs/heads/").ok_or_else(|| {
            Error::invalid(
                "ref",
                format!("{ref_name} is not a branch; a forge runs pull requests into branches (refs/heads/…)"),
            )
        })?;
        let (path, content) = match forge {
            "github" => (crate::ci::GITHUB_PATH, crate::ci::github(branch, install)),
            "gitlab" => (crate::ci::GITLAB_PATH, crate::ci::gitlab(branch, install)),
            other => {
                return Err(Error::invalid(
                    "ci",
                    format!("{other:?} is not a forge this writes for; use github or gitlab"),
                ))
            }
        };
        if wc.dry_run {
            return Ok((path.to_string(), false));
        }
        let message = format!("neo: {forge} CI for pull requests into {branch} ({path})");
        // The warm memory notices the moved tip on its next read (`Session::memory_of`).
        let made = memory.store().write_forge_file(path, content.as_bytes(), &message, &wc.identity, wc.now)?;
        Ok((path.to_string(), made))
    }

    /// `git neo purge`: remove one record from the memory ref's whole history.
    pub fn purge(&mut self, prefix: &str, reason: &str) -> Result<PurgeOutcome> {
        let (memory, wc) = self.writing()?;
        memory.purge(prefix, reason, &wc)
    }

    /// A record's file and derived state.
    pub fn show(&mut self, prefix: &str) -> Result<ShownRecord> {
        self.memory()?.show(prefix)
    }

    /// The records `filter` selects, in the order of the memory.
    pub fn list(&mut self, filter: &ListFilter) -> Result<Vec<RecordState>> {
        Ok(self.memory()?.list(filter)?.into_iter().map(RecordState::from).collect())
    }

    /// Every record only a fetched copy holds (not merged by `sync`), with the remote-tracking
    /// ref it was read from: front ends mark such records with it. Read once for a whole listing.
    pub fn fetched(&mut self) -> Result<std::collections::BTreeMap<crate::record::RecordId, String>> {
        Ok(self.memory()?.fetched().clone())
    }

    /// Review-mode proposals waiting for `approve` or `reject`.
    pub fn proposed(&mut self) -> Result<Vec<RecordState>> {
        Ok(self.memory()?.proposed()?.iter().map(RecordState::from).collect())
    }

    /// Move proposals onto the memory ref.
    pub fn approve(&mut self, prefixes: &[String], all: bool) -> Result<ReviewOutcome> {
        let (memory, wc) = self.writing()?;
        memory.approve(prefixes, all, &wc)
    }

    /// Drop proposals.
    pub fn reject(&mut self, prefixes: &[String]) -> Result<ReviewOutcome> {
        let (memory, wc) = self.writing()?;
        memory.reject(prefixes, &wc)
    }

    /// The current facts as plain data.
    pub fn export(&mut self) -> Result<Vec<ExportedFact>> {
        Ok(self.memory()?.export())
    }

    /// The current facts as one markdown document titled `title`.
    pub fn export_markdown(&mut self, title: &str) -> Result<String> {
        Ok(self.memory()?.export_markdown(title))
    }

    /// Every attempt at `task`, oldest first.
    pub fn task_history(&mut self, task: &str) -> Result<Vec<AttemptView>> {
        self.memory()?.task_history(task)
    }

    /// What `recheck` of `prefix` would run, and whether the command is new to this clone.
    pub fn recheck_plan(&mut self, prefix: &str) -> Result<crate::api::learn::attempts::RecheckPlan> {
        self.memory()?.recheck_plan(prefix)
    }

    /// Re-run an attempt's check at HEAD with `shell`: the new attempt and the original's outcome.
    /// A command new to this clone runs only when `approved`.
    pub fn recheck(
        &mut self,
        prefix: &str,
        shell: &Path,
        timeout: Duration,
        approved: bool,
    ) -> Result<crate::api::learn::attempts::Recheck> {
        let (memory, wc) = self.writing()?;
        memory.recheck(prefix, shell, timeout, approved, &wc)
    }

    /// Every problem of each request, as the write would find it, without writing (`None` for a
    /// request that would be accepted).
    pub fn check_facts(&mut self, requests: &[AddRequest]) -> Result<Vec<Option<Error>>> {
        let (memory, wc) = self.writing()?;
        Ok(requests.iter().map(|r| memory.prepare_fact(r, &wc).err()).collect())
    }

    /// Add many facts `batch_size` per commit (`Memory::import`).
    pub fn import(
        &mut self,
        requests: &[AddRequest],
        batch_size: usize,
        skip_invalid: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportOutcome> {
        let (memory, wc) = self.writing()?;
        memory.import(requests, batch_size, skip_invalid, &wc, progress)
    }

    /// Import another memory tool's store (`Memory::import_foreign`).
    pub fn import_foreign(
        &mut self,
        foreign: &crate::foreign::Foreign,
        batch_size: usize,
        skip_invalid: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ForeignOutcome> {
        let (memory, wc) = self.writing()?;
        memory.import_foreign(foreign, batch_size, skip_invalid, &wc, progress)
    }

    /// The memory ref's commits, newest first, at most `limit`: all of them, or those in
    /// `<from>..<to>` (an empty `<to>` is the memory ref).
    pub fn log(&mut self, range: Option<&str>, limit: usize) -> Result<Vec<LoggedCommit>> {
        Ok(self.commits(range, limit)?.into_iter().map(LoggedCommit::from).collect())
    }

    fn commits(&mut self, range: Option<&str>, limit: usize) -> Result<Vec<crate::store::CommitInfo>> {
        let memory = self.memory()?;
        let Some(range) = range else { return memory.log(limit) };
        let store = memory.store();
        let (a, b) = range
            .split_once("..")
            .ok_or_else(|| Error::invalid("range", format!("{range:?} is not a range; use <from>..<to>")))?;
        let from = store.resolve_commit(a)?;
        let to = store.resolve_commit(if b.is_empty() { store.ref_name() } else { b })?;
        let mut out = Vec::new();
        for c in store.commits_between(Some(from), to)?.into_iter().take(limit) {
            out.extend(store.history(c.id, 1)?);
        }
        Ok(out)
    }

    /// What one commit of the memory changed against its first parent.
    pub fn changes_of(&mut self, commit: &LoggedCommit) -> Result<Changes> {
        let store = self.memory()?.store();
        let id = store.resolve_commit(&commit.commit)?;
        let parent = commit.parents.first().map(|p| store.resolve_commit(p)).transpose()?;
        crate::api::inspect::changes::changes(store, parent, id)
    }

    /// What changed in memory between two revisions (`to`: the memory ref by default).
    pub fn diff(&self, from: &str, to: Option<&str>) -> Result<Changes> {
        let store = self.store()?;
        let from = store.resolve_commit(from)?;
        let to = store.resolve_commit(to.unwrap_or(store.ref_name()))?;
        crate::api::inspect::changes::changes(&store, Some(from), to)
    }

    /// Push the memory to a proposal branch of `remote` for review: the outcome, and the branch
    /// the memory ref is.
    pub fn propose(&self, remote: Option<&str>, name: Option<&str>) -> Result<(ProposeOutcome, String)> {
        let store = self.store()?;
        let wc = self.write_context(&store)?;
        let outcome = crate::api::share::propose(&store, remote, name, &wc)?;
        let branch = store.branch().unwrap_or("neo-memory").to_string();
        Ok((outcome, branch))
    }

    /// Install the project's git hooks that scan outcomes after commits and merges.
    pub fn install_hooks(&self) -> Result<Vec<HookChange>> {
        crate::api::share::hooks::install(&self.project_store()?)
    }

    /// Remove the hooks [`Session::install_hooks`] installed.
    pub fn uninstall_hooks(&self) -> Result<Vec<HookChange>> {
        crate::api::share::hooks::uninstall(&self.project_store()?)
    }
}
