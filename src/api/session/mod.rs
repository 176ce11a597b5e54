//! The session: what a front end holds while it serves one repository, and the one place where
//! the use cases that need more than the memory are put together.
//!
//! Both front ends use it the same way: the CLI makes a session for one command, the MCP server
//! keeps one warm across calls. It owns
//! - the memory of each scope it has read (the project's, and the user, org and session memories
//!   beside it: docs/scopes.md), each reloaded when a tip it was read from has moved (another
//!   process wrote); commands act on one scope (`--scope`, the project by default), recall reads
//!   them all (`across.rs`);
//! - the embedder, loaded lazily on first need, with the lexical fallback when it is missing or
//!   fails (then it says why once, as a [`Notice`]);
//! - each scope's recall indexes, caught up to its memory's tips;
//! - the Construct library with its cached pattern vectors;
//! - the clock ([`Clock`], for validity windows and ages: it needs no identity) apart from the
//!   author ([`SessionOptions::identity`], needed only to write);
//! - and the configuration the front end read from its environment, as plain data.
//!
//! Recall (with the Construct layer attached), add (with supersession), attempts, corrections,
//! outcomes and verify are each one call here. Nothing here prints: what a person should be told
//! (a rebuilt cache, semantic recall off) is queued as a [`Notice`] for the front end to render.

pub(crate) mod options;

mod across;
mod front;
mod inspect;
mod learn;
mod live;
mod recall;
pub mod scopes;
pub use live::{LiveKey, Refreshed};

use crate::api::inspect::verify::Report;
use crate::api::learn::attempts::AttemptRequest;
use crate::api::learn::outcomes::Explanation;
use crate::api::memory::Memory;
use crate::api::write::correct::History;
use crate::api::write::supersede::Similarity;
use crate::api::write::supersede::{AddStep, CandidateFn};
use crate::api::write::AddOutcome;
use crate::api::write::AddRequest;
use crate::api::write::WriteContext;
use crate::construct::{Hit, Library};
use crate::embed::{self, Embedder, EmbedderChoice, NoEmbedder};
use crate::error::{Error, Result};
use crate::index::{IndexError, Indexes, Refresh};
use crate::outcomes::ScanReport;
use crate::record::{Record, RecordId, Timestamp};
use crate::scope::Scope;
use crate::state::State;
use crate::store::{Identity, Store};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::api::session::options::{Clock, Notice, Progress, RecallQuery, SessionOptions};

/// How many nearest records `Session::near_pairs` looks at for each record.
pub const NEAR_NEIGHBOURS: usize = 10;

/// A front end's hold on one repository's memory and the scopes around it (see the module docs).
pub struct Session {
    opts: SessionOptions,
    /// Each scope read so far: its memory and its recall indexes.
    parts: BTreeMap<Scope, Part>,
    /// The fold of every scope a recall read, and which scope each record came from.
    union: Option<Union>,
    warm: Warm,
    /// Writes are planned and rendered, not committed (see [`Session::dry_run`]).
    dry_run: bool,
    /// A live session's view of memory (`recall::pin`), when a front end started one.
    pin: Option<LivePin>,
    /// When git's housekeeping after a write runs (see [`Session::set_maintenance`]).
    maintenance: crate::store::Maintenance,
}

/// A live session's pin, and the stale notice last worked out (by the number of records the
/// session's memories held then: records are only ever added).
pub struct LivePin {
    pin: Arc<crate::recall::pin::Pin>,
    stale: Option<(usize, Option<crate::recall::pin::Stale>)>,
    /// Own writes taken into the pin and not yet kept in the worktree's live files.
    unsaved: Vec<RecordId>,
    /// The worktree live session this pin was read from, if any (not an MCP connection's).
    key: Option<live::LiveKey>,
}

/// Recall indexes and the tips they were opened at.
type Slot = Option<(Indexes, Vec<String>)>;

/// One scope's memory and caches.
#[derive(Default)]
struct Part {
    memory: Option<Memory>,
    indexes: Slot,
    /// The sections of the memory's ingested documents and their vectors, kept between recalls.
    documents: crate::api::recall::documents::DocumentSlot,
}

/// Records of several scopes folded together (a supersession named across scopes applies).
struct Union {
    scopes: Vec<Scope>,
    tips: Vec<String>,
    state: State,
    origins: Arc<HashMap<RecordId, Scope>>,
    /// Each scope's memory as it was folded in: its lineage's generation and how many records
    /// it had appended (see [`crate::api::memory::Lineage`]).
    seen: Vec<(Scope, u64, usize)>,
}

/// Everything kept warm beside the memories; split from them so a use case can read a memory
/// while the similarity search it calls back into uses the model and indexes.
struct Warm {
    embedder: Option<Box<dyn Embedder>>,
    /// Why there is no embedder, once asked.
    no_embedder: Option<NoEmbedder>,
    said_semantic_off: bool,
    library: Option<Library>,
    notices: Vec<Notice>,
    progress: Progress,
    /// Load the model as a process that answers one request after another runs it
    /// ([`embed::load_long_lived`]).
    long_lived: bool,
    /// Recall's telemetry is appended after the answer ([`Session::answer_first`]).
    answer_first: bool,
    /// Recall events not appended yet: the telemetry file and the event (at most a few: every
    /// settle, telemetry read and recall appends what waits).
    telemetry: Vec<(crate::layout::CacheDir, crate::api::learn::telemetry::Event)>,
}

fn write_context(identity: Option<&Identity>, now: Timestamp, store: &Store) -> Result<WriteContext> {
    let identity = match identity {
        Some(i) => i.clone(),
        None => store.configured_identity().ok_or_else(|| Error::Config {
            key: "user.name".into(),
            message: "is not set; run `git config user.name \"Your Name\"` and `git config user.email you@example.com` \
                      in this repository (add --global for every repository), or set GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL"
                .into(),
        })?,
    };
    // git refuses an author holding `<`, `>` or a line break (they delimit the email in a commit
    // header): say so as the setting to fix, before anything is written.
    for (key, value) in [("user.name", &identity.name), ("user.email", &identity.email)] {
        if let Some(c) = value.chars().find(|c| matches!(c, '<' | '>') || c.is_control()) {
            return Err(Error::invalid(
                key,
                format!(
                    "{:?} holds {}, which git does not allow in an author; set it without it (`git config {key} …`, or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL)",
                    crate::display::escape(value),
                    crate::display::escape(&c.to_string())
                ),
            ));
        }
    }
    Ok(WriteContext::new(identity, now))
}

/// Lend the boxed embedder for one call (shortening its trait-object lifetime to the borrow's).
fn reborrow(e: &mut Option<Box<dyn Embedder>>) -> Option<&mut dyn Embedder> {
    e.as_mut().map(|b| &mut **b as &mut dyn Embedder)
}

impl Warm {
    /// Start loading the embedder once (in the background: see [`embed::load`]); remember why
    /// when there is none.
    fn ensure_embedder(&mut self, choice: &EmbedderChoice) {
        if self.embedder.is_none() && self.no_embedder.is_none() {
            let loaded =
                if self.long_lived { embed::load_long_lived(choice).map(|(e, _)| e) } else { embed::load(choice) };
            match loaded {
                Ok(e) => self.embedder = Some(e),
                Err(why) => self.no_embedder = Some(why),
            }
        }
    }

    /// Wait for the embedder's model; a model that did not load leaves no embedder and its reason,
    /// as a load in place would have (asked before telling semantic recall from lexical).
    fn embedder_ready(&mut self) {
        if let Some(Err(e)) = self.embedder.as_mut().map(|e| e.ready()) {
            self.embedder = None;
            self.no_embedder = Some(NoEmbedder::Failed(e.to_string()));
        }
    }

    /// Say once that recall is lexical, and why (nothing when embeddings were turned off on purpose).
    fn say_semantic_off(&mut self) {
        if let Some(why) = &self.no_embedder {
            if !self.said_semantic_off && *why != NoEmbedder::Disabled {
                self.notices.push(Notice::SemanticOff(why.clone()));
            }
            self.said_semantic_off = true;
        }
    }

    /// Bring the recall indexes to `memory`'s tips (catching up, or building). A model that fails
    /// while embedding does not take recall down: lexical from then on. With `lexical` false
    /// (the similarity check on write, which searches vectors only) the lexical index may stay
    /// behind until the next recall.
    fn refresh_indexes(
        &mut self,
        slot: &mut Slot,
        memory: &Memory,
        choice: &EmbedderChoice,
        lexical: bool,
    ) -> Result<()> {
        self.ensure_embedder(choice);
        // The catch-up reads the vectors it can from the user's cache while the model may still
        // be loading; whether recall is semantic is known only once the load is over.
        let caught_up = self.catch_up(slot, memory, lexical);
        self.embedder_ready();
        caught_up
    }

    /// [`Warm::refresh_indexes`] with the embedder started.
    fn catch_up(&mut self, slot: &mut Slot, memory: &Memory, lexical: bool) -> Result<()> {
        let tips = memory.tip_ids();
        if slot.as_ref().is_some_and(|(i, t)| *t == tips && (!lexical || i.lexical_complete())) {
            return Ok(());
        }
        let Warm { embedder, no_embedder, progress, .. } = self;
        let open = slot;
        let mut report = |done: usize, total: usize| progress("embedding", done, total);
        // Caches this session holds: catch them up in place (after its own write, typically).
        if let Some((indexes, at)) = open.as_mut() {
            match memory.refresh_indexes(indexes, reborrow(embedder), lexical, &mut report) {
                Ok(Some(_)) => {
                    *at = tips;
                    return Ok(());
                }
                Err(Error::Index(IndexError::Embed(e))) => {
                    *embedder = None;
                    *no_embedder = Some(NoEmbedder::Failed(e.to_string()));
                }
                // Changed by another process, or something to rebuild: open afresh below.
                Ok(None) | Err(_) => {}
            }
        }
        *open = None;
        let (indexes, refresh) = match memory.open_indexes_with(reborrow(embedder), lexical, &mut report) {
            Err(Error::Index(IndexError::Embed(e))) => {
                *embedder = None;
                *no_embedder = Some(NoEmbedder::Failed(e.to_string()));
                memory.open_indexes_with(None, lexical, &mut report)?
            }
            other => other?,
        };
        if let Refresh::Rebuilt { reason, records, embedded } = &refresh {
            self.notices.push(Notice::Rebuilt { reason: reason.clone(), records: *records, embedded: *embedded });
        }
        *open = Some((indexes, tips));
        Ok(())
    }

    /// How similar `record` is to the closest `candidates` (for supersession on write), or why
    /// that cannot be told.
    fn similarity(
        &mut self,
        slot: &mut Slot,
        memory: &Memory,
        choice: &EmbedderChoice,
        record: &Record,
        is_candidate: &CandidateFn<'_>,
    ) -> Result<Similarity> {
        let opened = self.refresh_indexes(slot, memory, choice, false);
        let (Ok(()), Some((indexes, _)), Some(embedder)) = (&opened, slot.as_ref(), self.embedder.as_deref_mut())
        else {
            let why = match &opened {
                Err(e) => format!("the recall index could not be opened: {e}"),
                Ok(()) => {
                    self.no_embedder.as_ref().map(|n| n.to_string()).unwrap_or_else(|| "no embedding model".into())
                }
            };
            return Ok(Similarity::Unavailable(why));
        };
        match memory.similarity_scores(indexes, embedder, record, is_candidate) {
            Ok(s) => Ok(s),
            Err(Error::Index(IndexError::Embed(e))) => {
                Ok(Similarity::Unavailable(format!("the embedding model failed: {e}")))
            }
            Err(e) => Err(e),
        }
    }

    /// The Construct library (see [`Session::library`]).
    fn library(&mut self, places: &crate::api::share::scopes::Places) -> Result<&mut Library> {
        if self.library.is_none() {
            let store = places.project().ok();
            let project = store.as_ref().and_then(|s| s.construct_dir());
            let mut library =
                Library::load(project.as_deref()).map_err(|e| Error::invalid("construct", e.to_string()))?;
            if let Some(s) = &store {
                library.cache_vectors_in(s.caches().construct_vectors());
            }
            if let Some(first) = library.problems.first() {
                self.notices.push(Notice::ConstructProblems {
                    count: library.problems.len(),
                    first: format!("{}: {}: {}", first.file, first.field, first.message),
                });
            }
            self.library = Some(library);
        }
        Ok(self.library.as_mut().expect("loaded above"))
    }

    /// Construct patterns for `query` (with its vector when recall already embedded it).
    fn construct_hits(
        &mut self,
        places: &crate::api::share::scopes::Places,
        query: &str,
        query_vector: Option<&(String, Vec<f32>)>,
        k: usize,
    ) -> Result<Vec<Hit>> {
        let mut embedder = self.embedder.take();
        let hits = self.library(places).and_then(|l| {
            l.search_with(query, query_vector, k, reborrow(&mut embedder))
                .map_err(|e| Error::invalid("construct", e.to_string()))
        });
        self.embedder = embedder;
        hits
    }
}

impl Session {
    pub fn new(opts: SessionOptions) -> Session {
        Session {
            opts,
            parts: BTreeMap::new(),
            union: None,
            dry_run: false,
            pin: None,
            maintenance: crate::store::Maintenance::Inline,
            warm: Warm {
                embedder: None,
                no_embedder: None,
                said_semantic_off: false,
                library: None,
                notices: Vec::new(),
                progress: Box::new(|_, _, _| {}),
                long_lived: false,
                answer_first: false,
                telemetry: Vec::new(),
            },
        }
    }

    /// Serve another caller with the warm parts kept (memories, model, indexes, Construct): its
    /// author, clock, directory (inside the same repository) and scope replace the session's. For
    /// a long-lived front end that runs one command after another.
    pub fn set_caller(&mut self, identity: Option<Identity>, clock: Clock, dir: PathBuf) {
        self.opts.identity = identity;
        self.opts.clock = clock;
        self.opts.dir = dir;
    }

    /// Act on `scope` from now on (`None`: the project, with recall reading every scope).
    pub fn set_scope(&mut self, scope: Option<Scope>) {
        self.opts.scope = scope;
    }

    /// The scope asked for (`None`: the project, recall reading every scope).
    pub fn scope(&self) -> Option<&Scope> {
        self.opts.scope.as_ref()
    }

    /// Drop what is held for `scope` (its ref was deleted).
    pub(super) fn forget_scope(&mut self, scope: &Scope) {
        self.parts.remove(scope);
        self.union = None;
    }

    /// The scope commands act on.
    pub fn target(&self) -> Scope {
        self.opts.scope.clone().unwrap_or(Scope::Project)
    }

    /// Where this session's scopes are.
    pub fn places(&self) -> crate::api::share::scopes::Places {
        crate::api::share::scopes::Places { maintenance: self.maintenance, ..self.opts.places() }
    }

    /// Leave git's housekeeping after a write to git's own background process
    /// ([`crate::store::Maintenance::Detached`]) instead of running it inside the write: what a
    /// long-lived front end that serves one request after another wants.
    pub fn set_maintenance(&mut self, maintenance: crate::store::Maintenance) {
        self.maintenance = maintenance;
    }

    /// Run the model, once this session loads it, as a process that answers one request after
    /// another runs it ([`embed::load_long_lived`]: no arena that keeps the largest batch's
    /// buffers, threads that spin within a call): what `git neo mcp` wants. A model already
    /// loaded, or given ([`Session::give_embedder`]), stays as it is.
    pub fn set_long_lived(&mut self) {
        self.warm.long_lived = true;
    }

    /// Append recall's telemetry after the answer, in [`Session::settle`], instead of before it
    /// (0.14 ms of a warm recall at 10k facts, most of it the query's vector written as JSON):
    /// for a front end that settles between requests (the background server, `git neo mcp`).
    /// Whatever is left is appended before telemetry is read, by the next recall, and when the
    /// session is dropped.
    pub fn answer_first(&mut self) {
        self.warm.answer_first = true;
    }

    /// Append the telemetry events that wait; a failure is a notice, as it is on a recall.
    pub(crate) fn flush_telemetry(&mut self) {
        for (caches, event) in std::mem::take(&mut self.warm.telemetry) {
            if let Err(e) = crate::api::learn::telemetry::append(&caches, &event) {
                self.warm.notices.push(Notice::TelemetryFailed(e.to_string()));
            }
        }
    }

    /// The session `git neo session start` made current in this worktree, if any. A warm
    /// session reads it from its open project memory's git directory: finding the repository
    /// again for it cost a warm recall 0.5 ms.
    pub fn current_session(&self) -> Option<String> {
        match self.parts.get(&Scope::Project).and_then(|p| p.memory.as_ref()) {
            Some(m) => crate::api::share::scopes::session_named_in(m.store().git_dir()),
            None => self.places().current_session(),
        }
    }

    /// The directory this session works in.
    pub fn dir(&self) -> &std::path::Path {
        &self.opts.dir
    }

    /// The loaded model, handed over to another session (a caller that works on several
    /// repositories loads it once); this one loads it again if it needs it.
    pub fn take_embedder(&mut self) -> Option<Box<dyn crate::embed::Embedder>> {
        self.drop_indexes();
        self.warm.embedder.take()
    }

    /// Use `embedder` (taken from another session) instead of loading the model.
    pub fn give_embedder(&mut self, embedder: Box<dyn crate::embed::Embedder>) {
        self.drop_indexes();
        self.warm.embedder = Some(embedder);
        self.warm.no_embedder = None;
    }

    fn drop_indexes(&mut self) {
        for part in self.parts.values_mut() {
            part.indexes = None;
        }
    }

    /// Catch the open recall indexes of the memory this session writes to up to that memory
    /// (after a write), so that the next recall does not wait for it, and build what its next
    /// write reads ([`crate::state::State::prepare_same_thing`]), and swap in a vector index that
    /// finished folding beside the requests ([`crate::index::Indexes::land_fold`]): what a
    /// long-lived front end does between requests. Whether the indexes had anything to catch up.
    /// A failure is left for the next recall to meet and report.
    pub fn settle(&mut self) -> bool {
        self.flush_telemetry();
        let scope = self.target();
        let Some(part) = self.parts.get_mut(&scope) else { return false };
        if let Some(memory) = part.memory.as_ref() {
            memory.state().prepare_same_thing();
        }
        let (Some(memory), Some((_, at))) = (part.memory.as_ref(), part.indexes.as_ref()) else { return false };
        let caught_up = *at != memory.tip_ids();
        if caught_up {
            let _ = self.warm.refresh_indexes(&mut part.indexes, memory, &self.opts.embedder, true);
        }
        // A vector index folded beside the requests is swapped in as soon as it is built.
        if let Some((indexes, _)) = part.indexes.as_mut() {
            let _ = indexes.land_fold();
        }
        // Every scope's vectors laid out for recall's exact scan, off the next request's clock
        // (a layout that fails leaves the scan to usearch).
        for part in self.parts.values_mut() {
            if let Some((indexes, _)) = part.indexes.as_mut() {
                let _ = indexes.prepare_scan();
            }
        }
        caught_up
    }

    /// How many records this session holds in memory, over every scope it has read (what a
    /// long-lived front end reports about what it keeps warm).
    pub fn records_held(&self) -> usize {
        self.parts.values().filter_map(|p| p.memory.as_ref()).map(|m| m.state().entries.len()).sum()
    }

    /// The memory budget of the background server (`neo.server.memory`) as this repository's
    /// git configuration (the user's included) sets it.
    pub fn server_memory(&self) -> Result<u64> {
        let store = self.places().project()?;
        match store.config_value(crate::config::SERVER_MEMORY) {
            Some(v) => crate::config::parse_size(crate::config::SERVER_MEMORY, &v),
            None => Ok(crate::config::DEFAULT_SERVER_MEMORY),
        }
    }

    /// Report long work through `progress` from now on.
    pub fn set_progress(&mut self, progress: Progress) {
        self.warm.progress = progress;
    }

    /// What the front end should say, oldest first; each is returned once.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.warm.notices)
    }

    /// The current time by the session's clock.
    pub fn now(&self) -> Timestamp {
        self.opts.clock.now()
    }

    /// Open the store of the scope commands act on (without loading the memory).
    pub(crate) fn store(&self) -> Result<Store> {
        self.store_of(&self.target())
    }

    /// Open `scope`'s store, making a missing user repository or org cache.
    pub(crate) fn store_of(&self, scope: &Scope) -> Result<Store> {
        self.places().open(scope, true)?.ok_or_else(|| Error::invalid("scope", format!("{scope} has no memory")))
    }

    /// The project's store (for what only the project has: its work tree, hooks, Construct).
    pub(crate) fn project_store(&self) -> Result<Store> {
        self.places().project()
    }

    /// Who writes and when: the identity given, else git config `user.name`/`user.email` of `store`.
    /// Inside [`Session::dry_run`] the context says so, and every write only plans.
    ///
    /// A write to another scope (the user memory, the org cache) is made by the person working in
    /// this repository: without an identity given, the one git would use here (this repository's
    /// config, then the global one) comes first, then the other scope's own config.
    pub(crate) fn write_context(&self, store: &Store) -> Result<WriteContext> {
        let here = match &self.opts.identity {
            Some(i) => Some(i.clone()),
            // The project is opened once, and only for a write elsewhere.
            None => self
                .project_store()
                .ok()
                .filter(|p| p.git_dir() != store.git_dir())
                .and_then(|p| p.configured_identity()),
        };
        Ok(WriteContext { dry_run: self.dry_run, ..write_context(here.as_ref(), self.now(), store)? })
    }

    /// Read `scope`'s memory afresh.
    pub(crate) fn load_memory_of(&mut self, scope: &Scope) -> Result<Memory> {
        let mut memory = Memory::load(self.store_of(scope)?)?;
        memory.set_scope(scope.clone());
        if let Some(first) = memory.invalid().first() {
            self.warm.notices.push(Notice::InvalidEntries {
                count: memory.invalid().len(),
                first: format!("{}: {}", first.path, first.problems),
            });
        }
        Ok(memory)
    }

    /// The target scope's memory, read on first use and again whenever a tip it was read from
    /// has moved.
    pub(crate) fn memory(&mut self) -> Result<&mut Memory> {
        let scope = self.target();
        self.memory_of(&scope)
    }

    /// `scope`'s memory, kept like [`Session::memory`].
    pub(crate) fn memory_of(&mut self, scope: &Scope) -> Result<&mut Memory> {
        let stale = match self.parts.get(scope).and_then(|p| p.memory.as_ref()) {
            None => true,
            Some(m) => {
                let now: Vec<String> = m.store().tips()?.into_iter().map(|(_, c)| c.to_string()).collect();
                now != m.tip_ids()
            }
        };
        if stale {
            let mut memory = self.load_memory_of(scope)?;
            // A live session's record of its own writes outlives the reload.
            let part = self.parts.entry(scope.clone()).or_default();
            if let Some(old) = part.memory.as_mut() {
                memory.written = std::mem::take(&mut old.written);
            }
            part.memory = Some(memory);
        }
        Ok(self.parts.get_mut(scope).and_then(|p| p.memory.as_mut()).expect("loaded above"))
    }

    /// Pairs of `scope`'s records, both accepted by `wanted`, whose indexed vectors are at
    /// `threshold` cosine or more, each pair once with the higher score found; `None` when the
    /// index holds no vectors (no model). Each record's nearest [`NEAR_NEIGHBOURS`] are looked at.
    pub(crate) fn near_pairs(
        &mut self,
        scope: &Scope,
        threshold: f32,
        wanted: &(dyn Fn(RecordId) -> bool + Sync),
    ) -> Result<Option<Vec<(RecordId, RecordId, f32)>>> {
        self.memory_of(scope)?;
        let part = self.parts.get_mut(scope).expect("read above");
        let memory = part.memory.as_ref().expect("read above");
        self.warm.refresh_indexes(&mut part.indexes, memory, &self.opts.embedder, false)?;
        let Some((indexes, _)) = part.indexes.as_ref().filter(|(i, _)| i.vectors.is_some()) else {
            return Ok(None);
        };
        Ok(Some(indexes.near_pairs(threshold, NEAR_NEIGHBOURS, wanted)?))
    }

    /// The target memory and a write context for it.
    pub(super) fn writing(&mut self) -> Result<(&mut Memory, WriteContext)> {
        let (now, dry_run) = (self.now(), self.dry_run);
        // Writing to the user or org memory: as the person working here (see `write_context`).
        let identity = match self.opts.identity.clone() {
            None if matches!(self.target(), Scope::User | Scope::Org) => {
                self.project_store().ok().and_then(|p| p.configured_identity())
            }
            given => given,
        };
        let memory = self.memory()?;
        let wc = WriteContext { dry_run, ..write_context(identity.as_ref(), now, memory.store())? };
        Ok((memory, wc))
    }

    /// Run `f` with every write it makes planned, filtered and rendered but not committed
    /// (`--dry-run`); `on == false` runs it as it is. Whatever `f` returns, the session writes for
    /// real again afterwards, so a warm server's next command is not a dry run by accident.
    pub fn dry_run<T>(&mut self, on: bool, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        let before = self.dry_run;
        self.dry_run = on || before;
        let result = f(self);
        self.dry_run = before;
        result
    }

    /// Whether writes are being planned only.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Why recall is lexical, if it is.
    pub fn semantic_off(&self) -> Option<&NoEmbedder> {
        self.warm.no_embedder.as_ref()
    }

    /// The Construct library: shipped patterns and the project's (those failing lint are left out
    /// and reported), with pattern vectors cached in the repository's cache directory.
    pub fn library(&mut self) -> Result<&mut Library> {
        self.warm.library(&self.opts.places())
    }

    /// Search the Construct for `query` (semantic when the model is there).
    pub fn construct_search(&mut self, query: &str, k: usize) -> Result<Vec<Hit>> {
        self.warm.ensure_embedder(&self.opts.embedder);
        self.warm.embedder_ready();
        self.warm.construct_hits(&self.opts.places(), query, None, k)
    }

    /// Delete the target scope's recall indexes and build them again.
    pub fn reindex(&mut self) -> Result<crate::api::view::Reindexed> {
        let scope = self.target();
        self.memory()?;
        let part = self.parts.get_mut(&scope).expect("loaded above");
        let memory = part.memory.as_ref().expect("loaded above");
        let warm = &mut self.warm;
        warm.ensure_embedder(&self.opts.embedder);
        warm.embedder_ready();
        warm.say_semantic_off();
        part.indexes = None;
        let Warm { embedder, progress, .. } = warm;
        let (indexes, refresh) =
            memory.reindex(reborrow(embedder), &mut |done, total| progress("embedding", done, total))?;
        let stamp = indexes.stamp.clone();
        part.indexes = Some((indexes, memory.tip_ids()));
        Ok(crate::api::view::Reindexed { refresh, stamp })
    }

    /// Add a fact to the target scope, superseding by explicit id, by key, and (with the model)
    /// by similarity to the current facts of the same type and area there. In a dry run
    /// ([`Session::dry_run`]) it decides everything and writes nothing. The model and indexes are
    /// opened only when a similarity comparison is needed. A write to the org memory is shared at
    /// once (see `Session::share`).
    pub fn add(&mut self, req: &AddRequest) -> Result<AddOutcome> {
        let scope = self.target();
        let (foreign, local) = self.foreign_supersessions(req)?;
        let req = &local;
        let (_, wc) = self.writing()?;
        let part = self.parts.get_mut(&scope).expect("loaded by writing()");
        let memory = part.memory.as_mut().expect("loaded by writing()");
        let slot = &mut part.indexes;
        let (warm, choice) = (&mut self.warm, &self.opts.embedder);
        let reader: &Memory = memory;
        // The similarity step, measured here (the model and indexes are the session's) and
        // handed to the write layer as a value.
        let mut plan = match reader.plan_add(req, &wc)? {
            AddStep::Planned(plan) => plan,
            AddStep::NeedsSimilarity(pending) => {
                let is_candidate = |id: &RecordId| reader.is_candidate(pending.fact(), id);
                let similarity = warm.similarity(slot, reader, choice, pending.record(), &is_candidate)?;
                reader.finish_add(pending, similarity, &wc)?
            }
        };
        plan.supersedes.extend(foreign);
        let outcome = memory.apply_add(plan, &wc)?;
        self.share(outcome, &wc)
    }

    /// Record an attempt (a reported check, or one git-neo ran).
    pub fn attempt(&mut self, req: &AttemptRequest) -> Result<AddOutcome> {
        let (memory, wc) = self.writing()?;
        let outcome = memory.attempt(req, &wc)?;
        self.share(outcome, &wc)
    }

    /// Forget a record: append a retraction.
    pub fn forget(&mut self, id: &str, reason: &str) -> Result<AddOutcome> {
        let (memory, wc) = self.writing()?;
        let outcome = memory.forget(id, reason, &wc)?;
        self.share(outcome, &wc)
    }

    /// Mark a fact or attempt outdated, with a reason.
    pub fn outdated(&mut self, id: &str, reason: &str) -> Result<AddOutcome> {
        let (memory, wc) = self.writing()?;
        let outcome = memory.outdated(id, reason, &wc)?;
        self.share(outcome, &wc)
    }

    /// Record that a person checked a fact at HEAD, re-anchoring it (`anchors`, or where its
    /// anchors are now when empty): clears its anchor flags (`git neo confirm`).
    pub fn confirm(
        &mut self,
        id: &str,
        anchors: &[String],
        reason: Option<&str>,
    ) -> Result<crate::api::write::confirm::Confirmation> {
        let (memory, wc) = self.writing()?;
        let mut c = memory.confirm(id, anchors, reason, &wc)?;
        c.outcome = self.share(c.outcome, &wc)?;
        Ok(c)
    }

    /// Propose a lesson patch to one of the project's instruction files (`git neo lesson
    /// propose`); in `neo.lessons.mode=auto` an append-only one is applied at once.
    pub fn propose_lesson(
        &mut self,
        req: &crate::api::learn::lessons::LessonRequest,
    ) -> Result<crate::api::learn::lessons::Proposed> {
        let (memory, wc) = self.writing()?;
        let record = memory.plan_lesson(req, &wc)?;
        let mut p = memory.propose_lesson(record, &wc)?;
        p.outcome = self.share(p.outcome, &wc)?;
        Ok(p)
    }

    /// The lesson text a record gives (`git neo lesson propose --from ID`): a fact's subject, an
    /// attempt's inference (else its task and action), and the record's id to rest on.
    pub fn lesson_text_of(&mut self, id: &str) -> Result<(String, RecordId)> {
        let memory = self.memory()?;
        let rid = memory.resolve("from", id)?;
        let e = &memory.state().entries[&rid];
        let text = match &e.record.payload {
            crate::record::Payload::Fact(f) => f.subject.clone(),
            crate::record::Payload::Attempt(a) => {
                a.inference.clone().unwrap_or_else(|| format!("For {}: {}", a.task, a.action))
            }
            _ => {
                return Err(Error::invalid(
                    "from",
                    format!(
                        "{} is a {}; a lesson comes from a fact, a failure or an attempt",
                        rid.short(),
                        e.record.kind
                    ),
                ))
            }
        };
        Ok((text, rid))
    }

    /// Every lesson of the target memory, oldest first.
    pub fn lessons(&mut self) -> Result<Vec<crate::api::learn::lessons::LessonView>> {
        Ok(self.memory()?.lessons())
    }

    /// Apply a lesson to the work tree (`git neo lesson apply`).
    pub fn apply_lesson(&mut self, id: &str) -> Result<crate::api::learn::lessons::WorkTreeEdit> {
        let (memory, wc) = self.writing()?;
        memory.apply_lesson(id, &wc)
    }

    /// Restore the file a lesson changed (`git neo lesson restore`; only with `yes`).
    pub fn restore_lesson(&mut self, id: &str, yes: bool) -> Result<crate::api::learn::lessons::WorkTreeEdit> {
        let (memory, wc) = self.writing()?;
        memory.restore_lesson(id, yes, &wc)
    }

    /// Undo a supersession, an outdated mark or a forget; returns the records it restores.
    pub fn revert(&mut self, id: &str, reason: Option<&str>) -> Result<(AddOutcome, Vec<RecordId>)> {
        let (memory, wc) = self.writing()?;
        let (outcome, restored) = memory.revert(id, reason, &wc)?;
        Ok((self.share(outcome, &wc)?, restored))
    }

    /// Re-read every automatic supersession with today's update rule and revert those it would
    /// not make (in a dry run, [`Session::dry_run`], only say which).
    pub fn repair(&mut self) -> Result<crate::api::write::correct::Repair> {
        let (memory, wc) = self.writing()?;
        memory.repair(&wc)
    }

    /// The whole chain around a record or key.
    pub fn history(&mut self, what: &str) -> Result<History> {
        self.memory()?.history(what)
    }

    /// Scan `branch` (default: the current one) after `since` (default: its cursor) and write the
    /// outcomes found.
    pub fn outcomes(&mut self, branch: Option<&str>, since: Option<&str>) -> Result<ScanReport> {
        let (memory, wc) = self.writing()?;
        let opts = memory.scan_options(branch, since)?;
        memory.outcomes(&opts, &wc)
    }

    /// How a record's confidence came to be.
    pub fn explain(&mut self, id: &str) -> Result<Explanation> {
        self.memory()?.explain(id)
    }

    /// Verify the target scope's memory (or a range `A..B` of its history); `None` when there is
    /// no memory yet.
    pub fn verify(&mut self, range: Option<&str>) -> Result<Option<(String, Report)>> {
        let store = self.store()?;
        let Some((name, tip, from)) = crate::api::inspect::verify::target(&store, range)? else { return Ok(None) };
        let mut report = crate::api::inspect::verify::verify(&store, &name, tip, from, self.now())?;
        // Recall reads the remote-tracking copies too (what they alone hold, filtered): verify
        // checks every ref recall reads, and names the copy a problem is on.
        if range.is_none() {
            for (copy, copy_tip) in store.tips()? {
                if copy_tip == tip || copy == name {
                    continue;
                }
                let other = crate::api::inspect::verify::verify(&store, &copy, copy_tip, None, self.now())?;
                for mut p in other.problems {
                    if report.problems.iter().any(|q| q.path == p.path && q.field == p.field && q.message == p.message)
                    {
                        continue;
                    }
                    p.path = format!("{copy}:{}", p.path);
                    report.problems.push(p);
                }
                report.copies.push(copy);
            }
        }
        Ok(Some((name, report)))
    }
}

/// What waits to be appended to telemetry is appended as the session ends (a failure then has no
/// command left to be told in: its notice goes with the session).
impl Drop for Session {
    fn drop(&mut self) {
        self.flush_telemetry();
    }
}
