//! The write path: blobs, a fan-out tree edit, one commit, and a compare-and-swap on the ref.
//!
//! Records are content-addressed, so writing their blobs needs no lock and a retry is idempotent:
//! only the ref update is atomic. On a lost race (`ReferenceOutOfDate`, or `MustNotExist` when a
//! concurrent writer created the ref first) the tip is re-read and the same records are applied to
//! the new tree. A held lock is waited for with jittered backoff, up to the lock timeout; a lock
//! that outlives it becomes a clear [`Error::Locked`], never an endless spin.
//!
//! A writer killed while it holds a ref's lock file (`kill -9` of the background server in the
//! middle of a commit) leaves that file behind, and git never removes it. So every git-neo ref
//! update also holds the writers' OS lock (`neo/ref-write.lock`), which the kernel releases when
//! its holder dies: a writer holding it that still finds a ref's lock file knows no git-neo
//! process is inside an update, and once that file has stood for [`ABANDONED_AFTER`] (git's own
//! ref updates hold theirs for milliseconds) it was abandoned, and is removed.

use super::GitContext;
use super::Store;
use crate::error::{Error, Result};
use crate::record::{Kind, Record, RecordId, Timestamp};
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// From this many records, a write packs its blobs ([`Store::write_blobs_packed`]).
const PACK_FROM: usize = 64;

/// Who writes: used for commit author, committer and the reflog entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// The `Name <email>` form stored in records' `author` field.
    pub fn author_field(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }

    pub(crate) fn signature(&self, now: Timestamp) -> gix::actor::Signature {
        gix::actor::Signature {
            name: self.name.as_str().into(),
            email: self.email.as_str().into(),
            time: gix::date::Time { seconds: now.0, offset: 0 },
        }
    }
}

/// What a write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The new commit on the ref, or `None` when every record was already there (nothing written).
    pub commit: Option<ObjectId>,
    /// How many entries the write changed: records new on the ref (or, for removals, removed).
    pub added: usize,
    /// How many compare-and-swap attempts it took.
    pub attempts: u32,
    /// The ref's tip the commit was made on (`None` when the write made the ref, or wrote
    /// nothing).
    pub parent: Option<ObjectId>,
    /// For [`Store::write_records`]: the records the commit added to the tree (those it did not
    /// hold already), in the order given.
    pub added_records: Vec<RecordId>,
}

/// How many ref updates (lock held, not yet committed) are in progress in this process.
///
/// A process that is asked to stop (SIGINT, SIGTERM) should wait while this is non-zero: dying
/// between taking the ref lock and committing is the one way to leave a stale lock behind. The
/// binary's signal handler reads it; the library itself never deals with signals.
static REF_UPDATES_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Remove the temporary and lock files this process holds; safe to call from a signal handler
/// (lock-free, no allocation).
pub fn cleanup_tempfiles_signal_safe() {
    gix::tempfile::registry::cleanup_tempfiles_signal_safe();
}

/// The number of ref updates in progress (see `REF_UPDATES_IN_FLIGHT`).
pub fn ref_updates_in_flight() -> usize {
    REF_UPDATES_IN_FLIGHT.load(Ordering::SeqCst)
}

/// How long a ref's lock file must have stood, while no git-neo process is updating a ref, before
/// it counts as abandoned by a killed writer.
pub(crate) const ABANDONED_AFTER: Duration = Duration::from_secs(2);

/// Held (with the OS lock on `neo/ref-write.lock`) by a process for as long as it may hold a
/// memory ref's lock file; see the module header.
pub(crate) struct WritersLock {
    _file: std::fs::File,
    _in_flight: InFlight,
}

/// Marks a ref update in progress for as long as it lives.
pub(crate) struct InFlight;

impl InFlight {
    pub(crate) fn start() -> InFlight {
        REF_UPDATES_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        REF_UPDATES_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Total time spent re-applying after lost races before giving up with [`Error::Contention`].
const CONTENTION_BUDGET: Duration = Duration::from_secs(60);

/// A small, dependency-free jitter source: spreads retries of concurrent processes apart.
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        Jitter(u64::from(nanos) ^ (u64::from(std::process::id()) << 32) | 1)
    }

    fn below(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % max.max(1)
    }
}

pub(crate) fn is_lost_race(err: &gix::Error) -> bool {
    use gix::refs::file::transaction::prepare::{MustNotExist, ReferenceOutOfDate};
    err.downcast_any_ref::<ReferenceOutOfDate>().is_some() || err.downcast_any_ref::<MustNotExist>().is_some()
}

impl Store {
    /// Take the writers' lock, waiting (with jitter) up to the lock timeout for another git-neo
    /// process's ref update to end.
    pub(crate) fn writers_lock(&self) -> Result<WritersLock> {
        let path = self.caches().ref_write_lock();
        let io = |e: std::io::Error| Error::Io {
            context: format!("taking the writers' lock {}", path.display()),
            source: e,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
        let started = Instant::now();
        let mut jitter = Jitter::new();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(WritersLock { _file: file, _in_flight: InFlight::start() }),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < self.lock_timeout => {
                    std::thread::sleep(Duration::from_micros(200 + jitter.below(2_000)));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(Error::Locked {
                        ref_name: self.ref_name().to_string(),
                        lock: path,
                        age_secs: None,
                        waited_ms: started.elapsed().as_millis(),
                    })
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }

    /// With the writers' lock held: remove `lock` when it was abandoned (see the module header).
    /// True when it removed one, so the caller tries again at once.
    pub(crate) fn clear_abandoned_lock(&self, _held: &WritersLock, lock: &std::path::Path) -> bool {
        let stood = std::fs::metadata(lock).and_then(|m| m.modified()).ok().and_then(|m| m.elapsed().ok());
        match stood {
            Some(age) if age >= ABANDONED_AFTER => std::fs::remove_file(lock).is_ok(),
            _ => false,
        }
    }

    /// Run one ref transaction (`attempt`, which must not wait for the ref's lock itself) with
    /// the writers' lock held, clearing an abandoned lock file at `lock` and waiting for a
    /// foreign one up to the lock timeout. Returns the first outcome that is not a held lock.
    pub(crate) fn under_writers_lock<T>(
        &self,
        lock: &std::path::Path,
        mut attempt: impl FnMut() -> std::result::Result<T, gix::Error>,
    ) -> Result<std::result::Result<T, gix::Error>> {
        let started = Instant::now();
        let mut jitter = Jitter::new();
        loop {
            let held = self.writers_lock()?;
            match attempt() {
                Err(err) if err.is_retryable() => {
                    if self.clear_abandoned_lock(&held, lock) {
                        continue;
                    }
                    drop(held);
                    if started.elapsed() >= self.lock_timeout {
                        let age_secs = std::fs::metadata(lock)
                            .and_then(|m| m.modified())
                            .ok()
                            .and_then(|m| m.elapsed().ok())
                            .map(|d| d.as_secs());
                        return Err(Error::Locked {
                            ref_name: self.ref_name().to_string(),
                            lock: lock.to_path_buf(),
                            age_secs,
                            waited_ms: started.elapsed().as_millis(),
                        });
                    }
                    std::thread::sleep(Duration::from_micros(500 + jitter.below(5_000)));
                }
                other => return Ok(other),
            }
        }
    }

    /// Apply one ref edit under the writers' lock ([`Store::under_writers_lock`]), with `lock` the
    /// ref's lock file; `committer` signs the reflog entry. The inner result is git's answer
    /// (a lost race is the caller's to read).
    pub(crate) fn edit_ref(
        &self,
        edit: &RefEdit,
        lock: &std::path::Path,
        committer: Option<gix::actor::SignatureRef<'_>>,
    ) -> Result<std::result::Result<(), gix::Error>> {
        self.under_writers_lock(lock, || {
            let packed = gix::lock::acquire::Fail::AfterDurationWithBackoff(Duration::from_secs(1));
            self.repo
                .refs
                .transaction()
                .prepare([edit.clone()], gix::lock::acquire::Fail::Immediately, packed)
                .and_then(|t| t.commit(committer))
                .map(|_| ())
        })
    }

    /// Write `records` (kind, id, canonical bytes) to the ref in one commit with `message`.
    ///
    /// Records already on the ref are skipped; if all are, nothing is written. The `FORMAT` entry
    /// is added if missing. When `create_empty` is set and the ref does not exist, a commit holding
    /// only `FORMAT` is written even without records (that is `git neo init`).
    pub fn write_records(
        &self,
        records: &[(Kind, RecordId, Vec<u8>)],
        message: &str,
        who: &Identity,
        now: Timestamp,
        create_empty: bool,
    ) -> Result<WriteOutcome> {
        let (blobs, keep) = if records.len() >= PACK_FROM {
            self.write_blobs_packed(records)?
        } else {
            let mut blobs = Vec::with_capacity(records.len());
            for (kind, id, bytes) in records {
                let blob =
                    self.repo.write_blob(bytes).git(|| format!("writing the blob of record {}", id.short()))?.detach();
                blobs.push((Record::path(*kind, id), blob));
            }
            (blobs, None)
        };
        // Which records the tree did not hold: worked out again on each attempt of the swap.
        let mut added_at: Vec<usize> = Vec::new();
        let written = self.update_tree(message, who, now, create_empty, &mut |tree, editor| {
            added_at.clear();
            for (at, (path, blob)) in blobs.iter().enumerate() {
                if tree.lookup_entry_by_path(path).git(|| format!("looking up {path}"))?.is_none() {
                    editor
                        .upsert(path.as_str(), gix::objs::tree::EntryKind::Blob, *blob)
                        .git(|| format!("adding {path}"))?;
                    added_at.push(at);
                }
            }
            Ok(added_at.len())
        });
        let written = written.map(|mut w| {
            if w.commit.is_some() {
                w.added_records = added_at.iter().map(|&at| records[at].1).collect();
            }
            w
        });
        // The pack's `.keep` file protects it while nothing refers to its objects; once the commit
        // has landed (or failed, leaving them unreferenced) it goes, so `gc --auto` may fold the
        // pack into others. Left in place, every import would add packs that gc never repacks.
        if let Some(keep) = keep {
            let _ = std::fs::remove_file(keep);
        }
        written
    }

    /// Write the blobs of a large batch as one pack (with its index) instead of a loose file
    /// each: creating one file per record cost about half a millisecond on a common file system,
    /// seconds for a curation or an import of thousands of records, and then a `gc`. The pack is
    /// written to a temporary file and moved into place whole, so a crash leaves no half pack, and
    /// blobs are content-addressed, so a pack holding objects the repository already has is
    /// harmless. Only blobs the repository lacks go in.
    fn write_blobs_packed(&self, records: &[(Kind, RecordId, Vec<u8>)]) -> Result<PackedBlobs> {
        use std::io::Write;
        let hash = self.repo.object_hash();
        let mut blobs = Vec::with_capacity(records.len());
        let mut seen = std::collections::HashSet::new();
        let mut pack: Vec<u8> = Vec::new();
        let mut count = 0u32;
        for (kind, id, bytes) in records {
            let oid = gix::objs::compute_hash(hash, gix::objs::Kind::Blob, bytes)
                .git(|| format!("hashing the blob of record {}", id.short()))?;
            blobs.push((Record::path(*kind, id), oid));
            if seen.insert(oid) && !self.repo.objects.exists_without_refresh(&oid) {
                gix::odb::pack::data::entry::Header::Blob
                    .write_to(bytes.len() as u64, &mut pack)
                    .expect("writing to memory cannot fail");
                let mut z = gix::zlib::stream::deflate::Write::new(&mut pack, gix::zlib::Compression::BEST_SPEED);
                z.write_all(bytes).and_then(|_| z.flush()).expect("writing to memory cannot fail");
                count += 1;
            }
        }
        if count == 0 {
            return Ok((blobs, None));
        }
        // Pack format 2: "PACK", version, object count, the entries, then the hash of it all.
        let mut whole = Vec::with_capacity(pack.len() + 12 + hash.len_in_bytes());
        whole.extend_from_slice(&gix::odb::pack::data::header::encode(gix::odb::pack::data::Version::V2, count));
        whole.extend_from_slice(&pack);
        let mut hasher = gix::hash::hasher(hash);
        hasher.update(&whole);
        let trailer = hasher.try_finalize().git(|| "hashing a pack of new records".into())?;
        whole.extend_from_slice(trailer.as_slice());
        let dir = self.repo.objects.store_ref().path().join("pack");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Io { context: format!("creating {}", dir.display()), source: e })?;
        let outcome = gix::odb::pack::Bundle::write_to_directory(
            &mut whole.as_slice(),
            Some(&dir),
            &mut gix::progress::Discard,
            &std::sync::atomic::AtomicBool::new(false),
            None::<gix::objs::find::Never>,
            hash,
            gix::odb::pack::bundle::write::Options { thread_limit: Some(1), ..Default::default() },
        )
        .git(|| format!("writing a pack of {count} new records"))?;
        Ok((blobs, outcome.keep_path))
    }

    /// Remove record files from the ref in one commit. Only staging refs (review-mode proposals)
    /// use this: the memory ref itself is append-only.
    pub fn remove_records(
        &self,
        paths: &[String],
        message: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<WriteOutcome> {
        self.update_tree(message, who, now, false, &mut |tree, editor| {
            let mut removed = 0;
            for path in paths {
                if tree.lookup_entry_by_path(path).git(|| format!("looking up {path}"))?.is_some() {
                    editor.remove(path.as_str()).git(|| format!("removing {path}"))?;
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }

    /// Write one file (the forge area's, [`super::forge`]) at `path` in one commit; `false` when it
    /// already holds `content`.
    pub(crate) fn write_file_at(
        &self,
        path: &str,
        content: &[u8],
        message: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<bool> {
        let blob = self.repo.write_blob(content).git(|| format!("writing {path}"))?.detach();
        let out = self.update_tree(message, who, now, false, &mut |tree, editor| {
            let same = tree
                .lookup_entry_by_path(path)
                .git(|| format!("looking up {path}"))?
                .is_some_and(|e| e.object_id() == blob);
            if same {
                return Ok(0);
            }
            editor.upsert(path, gix::objs::tree::EntryKind::Blob, blob).git(|| format!("adding {path}"))?;
            Ok(1)
        })?;
        Ok(out.commit.is_some())
    }

    /// The compare-and-swap loop every write goes through: read the tip, apply `edit` to its tree
    /// (it returns how many entries it changed; zero means nothing to write), commit, move the ref.
    fn update_tree(
        &self,
        message: &str,
        who: &Identity,
        now: Timestamp,
        create_empty: bool,
        edit: &mut dyn FnMut(&gix::Tree<'_>, &mut gix::object::tree::Editor<'_>) -> Result<usize>,
    ) -> Result<WriteOutcome> {
        let repo = &self.repo;
        let ref_name = self.ref_name().to_string();
        let format_blob = repo.write_blob(super::format_entry()).git(|| "writing the FORMAT blob".into())?.detach();
        let signature = who.signature(now);
        let mut time_buf = Default::default();
        let sig_ref = signature.to_ref(&mut time_buf);
        let reflog_message = message.lines().next().unwrap_or("neo: write").to_string();

        let started = Instant::now();
        let mut jitter = Jitter::new();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let local = self.local_tip()?;
            // With no local ref yet, continue the history of a fetched copy so the first local
            // write does not fork it.
            let parent = match local {
                Some(tip) => Some(tip),
                None => self.tips()?.into_iter().map(|(_, c)| c).next(),
            };
            let base_tree = match parent {
                Some(c) => repo
                    .find_commit(c)
                    .git(|| format!("reading memory commit {c}"))?
                    .tree_id()
                    .git(|| format!("reading the tree of {c}"))?
                    .detach(),
                None => ObjectId::empty_tree(repo.object_hash()),
            };
            let tree = repo.find_tree(base_tree).git(|| format!("reading memory tree {base_tree}"))?;
            let mut editor = tree.edit().git(|| "starting a tree edit".into())?;
            let added = edit(&tree, &mut editor)?;
            let needs_format = tree.find_entry("FORMAT").is_none();
            if needs_format {
                editor
                    .upsert("FORMAT", gix::objs::tree::EntryKind::Blob, format_blob)
                    .git(|| "adding FORMAT".into())?;
            }
            if added == 0 && !(create_empty && local.is_none()) {
                return Ok(WriteOutcome { commit: None, added: 0, attempts, parent: None, added_records: Vec::new() });
            }
            // gix's own `write` checks that every entry of every tree it writes exists: at 10k
            // records that is the 256 subtrees of `facts/` and a stat of each loose one, 2 ms of
            // a 3 ms write. The blobs were written just above and the other entries come from
            // the base tree, so the plain editor writes the changed trees as they are.
            let tree_id = editor
                .detach()
                .write(|t| repo.write_object(t).map(gix::Id::detach))
                .git(|| "writing the memory tree".into())?;
            let commit = gix::objs::Commit {
                tree: tree_id,
                parents: parent.into_iter().collect(),
                author: signature.clone(),
                committer: signature.clone(),
                encoding: None,
                message: message.into(),
                extra_headers: Vec::new(),
            };
            let commit_id = repo.write_object(&commit).git(|| "writing the memory commit".into())?.detach();
            let edit = RefEdit {
                change: Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: true,
                        message: reflog_message.as_str().into(),
                    },
                    expected: match local {
                        Some(tip) => PreviousValue::MustExistAndMatch(Target::Object(tip)),
                        None => PreviousValue::MustNotExist,
                    },
                    new: Target::Object(commit_id),
                },
                name: self.ref_name.clone(),
                deref: false,
            };
            let lock = self.lock_path();
            let result = self.edit_ref(&edit, &lock, Some(sig_ref))?;
            match result {
                Ok(_) => {
                    self.maintain_after_write();
                    return Ok(WriteOutcome {
                        commit: Some(commit_id),
                        added,
                        attempts,
                        parent: local,
                        added_records: Vec::new(),
                    });
                }
                Err(err) if is_lost_race(&err) => {
                    if started.elapsed() > CONTENTION_BUDGET {
                        return Err(Error::Contention { ref_name, attempts });
                    }
                    if attempts > 3 {
                        std::thread::sleep(Duration::from_micros(jitter.below(2_000 * u64::from(attempts.min(20)))));
                    }
                }
                Err(err) => return Err(Error::Git { context: format!("updating {ref_name}"), source: Box::new(err) }),
            }
        }
    }

    /// The lock file git (and gix) create while updating the memory ref.
    pub fn lock_path(&self) -> std::path::PathBuf {
        self.repo.common_dir().join(format!("{}.lock", self.ref_name()))
    }

    /// Keep the object database healthy after writes that leave loose objects or packs: use git's
    /// own `gc --auto` heuristics (`gc.auto` loose objects, 6,700 unless configured, estimated
    /// from `objects/17/`; more than `gc.autoPackLimit` packs, 50 unless configured, which large
    /// writes add one at a time; either set to 0 turns its check off, as in git), checked
    /// cheaply here so the common write spawns nothing.
    fn maintain_after_write(&self) {
        let config = self.repo.config_snapshot();
        let setting = |key: &str, default: i64| config.integer(key).unwrap_or(default).max(0) as usize;
        let (auto, pack_limit) = (setting("gc.auto", 6_700), setting("gc.autoPackLimit", 50));
        let objects = self.repo.objects.store_ref().path();
        let too_many_loose = auto > 0 && {
            let loose = std::fs::read_dir(objects.join("17")).map(|d| d.count()).unwrap_or(0);
            loose > auto.div_ceil(256)
        };
        let too_many_packs = pack_limit > 0 && {
            let packs = std::fs::read_dir(objects.join("pack"))
                .map(|d| {
                    d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".pack")).count()
                })
                .unwrap_or(0);
            packs > pack_limit
        };
        if too_many_loose || too_many_packs {
            let detach = match self.maintenance {
                super::Maintenance::Inline => "gc.autoDetach=false",
                // git closes its standard streams before it goes on alone, so `run_git` returns
                // once the part git does in the foreground is done; git's own lock (`gc.pid`)
                // keeps a second gc from starting while this one runs.
                super::Maintenance::Detached => {
                    // The writes that follow still find the loose objects while git packs
                    // them: one gc at a time, and no process started to learn that. A lock
                    // older than git's own limit (12 hours) is one a gc left behind: git
                    // takes it over, so the check lets git run.
                    let live = std::fs::metadata(self.repo.common_dir().join("gc.pid"))
                        .and_then(|m| m.modified())
                        .is_ok_and(|at| at.elapsed().is_ok_and(|age| age < Duration::from_secs(12 * 3600)));
                    if live {
                        return;
                    }
                    "gc.autoDetach=true"
                }
            };
            // Best effort: a failed gc never fails the write that already landed.
            let args = ["-c", detach, "gc", "--auto", "--quiet"];
            let _ = match self.maintenance {
                super::Maintenance::Inline => self.run_git(&args),
                // The repack shares the cores with the requests that go on meanwhile: at git's
                // own priority, a call that met it (and a fold beside) took 219 ms, where the
                // same call takes 87 to 124 ms alone (a warm MCP session at 10k facts).
                super::Maintenance::Detached => self.run_git_at(&args, BACKGROUND_NICE),
            };
        }
    }

    /// [`Store::run_git`], stopped after `timeout`: git and everything it started (ssh, a remote
    /// helper, a local `upload-pack`) run in a process group of their own, which is killed whole
    /// when the time is up. What git had not finished, it had not written (refs are updated last).
    pub(crate) fn run_git_bounded(&self, args: &[&str], timeout: Duration) -> Result<String> {
        use std::io::Read;
        let mut cmd = std::process::Command::new("git");
        cmd.arg("--git-dir")
            .arg(self.repo.git_dir())
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::GitCommand { command: args.join(" "), message: format!("could not start git: {e}") })?;
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut buf);
                }
                buf
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    // SAFETY: kill(2) on our own child's process group; no memory is touched.
                    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::GitCommand {
                        command: args.join(" "),
                        message: format!(
                            "stopped after {:.0} s without an answer from the remote; nothing was changed here. \
                             Check the remote, or allow longer with `git config neo.sync.timeout <seconds>`",
                            timeout.as_secs_f64()
                        ),
                    });
                }
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        if !status.success() {
            let message =
                format!("{}\n{}", String::from_utf8_lossy(&stderr).trim(), String::from_utf8_lossy(&stdout).trim());
            return Err(Error::GitCommand { command: args.join(" "), message: message.trim().to_string() });
        }
        Ok(String::from_utf8_lossy(&stdout).into_owned())
    }

    /// Run a git subprocess against this repository, capturing its output.
    pub(crate) fn run_git(&self, args: &[&str]) -> Result<String> {
        self.run_git_at(args, 0)
    }

    /// [`Store::run_git`] with git (and everything it starts, a gc that goes on alone included)
    /// made `nice` lower in priority by `nice` steps (0: as this process).
    fn run_git_at(&self, args: &[&str], nice: i32) -> Result<String> {
        let mut cmd = std::process::Command::new("git");
        cmd.arg("--git-dir")
            .arg(self.repo.git_dir())
            .args(args)
            // Never wait for a password nobody can type (a background fetch, an agent's call).
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null());
        if nice > 0 {
            // SAFETY: between fork and exec the child only makes one system call (`nice`, which
            // is async-signal-safe) and touches no memory it shares with the parent. A nice
            // value that cannot be raised (one already at the limit) leaves git as it is.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    let _ = libc::nice(nice);
                    Ok(())
                });
            }
        }
        let out = cmd
            .output()
            .map_err(|e| Error::GitCommand { command: args.join(" "), message: format!("could not start git: {e}") })?;
        if !out.status.success() {
            // Some commands (`push --porcelain`) report per-ref failures on stdout.
            let message = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            );
            return Err(Error::GitCommand { command: args.join(" "), message: message.trim().to_string() });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// How much lower than the session's own the priority of a gc git carries on alone is
/// ([`super::Maintenance::Detached`]): it runs beside the requests that follow, which it must
/// not slow.
const BACKGROUND_NICE: i32 = 10;

/// The blobs a large write packed (tree path, blob id) and the pack it wrote, if any.
type PackedBlobs = (Vec<(String, ObjectId)>, Option<std::path::PathBuf>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    fn store_at(dir: &std::path::Path, timeout_ms: u64) -> Store {
        let options = StoreOptions { lock_timeout: Some(Duration::from_millis(timeout_ms)), ..Default::default() };
        Store::discover(dir, options).expect("open the store")
    }

    fn write(store: &Store, n: u32) -> Result<WriteOutcome> {
        let who = Identity { name: "Test".into(), email: "test@example.com".into() };
        store.write_records(&[], &format!("neo: write {n}"), &who, Timestamp(1_700_000_000 + i64::from(n)), true)
    }

    fn git(dir: &std::path::Path, args: &[&str], stdin: Option<&str>) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run git");
        // Fed from a thread of its own: git answers while it reads, and a pipe holds only so much.
        let mut input = child.stdin.take().expect("stdin");
        let text = stdin.unwrap_or("").to_string();
        let feeder = std::thread::spawn(move || input.write_all(text.as_bytes()));
        let out = child.wait_with_output().expect("git ran");
        feeder.join().expect("the feeder").expect("feed git");
        // (`count-objects` warns of the temporary files of a gc under way: said, not failed.)
        assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn loose_objects(dir: &std::path::Path) -> u64 {
        let counts = git(dir, &["count-objects", "-v"], None);
        counts.lines().find_map(|l| l.strip_prefix("count: ")).and_then(|v| v.parse().ok()).expect("a loose count")
    }

    #[test]
    fn a_detached_gc_packs_in_the_background_while_later_writes_land() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q"], None);
        // Loose objects that a branch reaches, past git's `gc --auto` threshold as about 1,400
        // one-fact writes leave a memory (the threshold lowered, as git allows, so that the
        // test need not write thousands of files).
        git(repo, &["config", "gc.auto", "512"], None);
        let blobs: Vec<String> = (0..1_500).map(|i| format!("object {i}\n")).collect();
        let files = tempfile::tempdir().expect("tempdir");
        let paths: Vec<String> = blobs
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let path = files.path().join(i.to_string());
                std::fs::write(&path, b).expect("write a blob file");
                path.display().to_string()
            })
            .collect();
        let ids = git(repo, &["hash-object", "-w", "--stdin-paths"], Some(&paths.join("\n")));
        let entries: String = ids.lines().enumerate().map(|(i, id)| format!("100644 blob {id}\tf{i}\n")).collect();
        let tree = git(repo, &["mktree"], Some(&entries));
        let commit = git(repo, &["commit-tree", &tree, "-m", "bulk"], None);
        git(repo, &["update-ref", "refs/heads/bulk", &commit], None);
        assert!(loose_objects(repo) >= 1_500);

        // A lock a gc left behind long ago (a machine that stopped mid-gc) holds nothing up.
        let stale = repo.join(".git/gc.pid");
        std::fs::write(&stale, "4194304 a-host-long-gone").expect("plant a stale gc lock");
        let long_ago = SystemTime::now() - Duration::from_secs(13 * 3600);
        std::fs::File::options().write(true).open(&stale).and_then(|f| f.set_modified(long_ago)).expect("age it");

        // git runs this hook before it decides to gc: it notes the priority the gc runs at.
        let hooks = repo.join("hooks-for-test");
        std::fs::create_dir_all(&hooks).expect("hooks");
        let hook = hooks.join("pre-auto-gc");
        std::fs::write(&hook, "#!/bin/sh\ncat /proc/$$/stat > \"$GIT_DIR/gc-stat\"\n").expect("hook");
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        git(repo, &["config", "core.hooksPath", &hooks.display().to_string()], None);

        let options = StoreOptions { maintenance: crate::store::Maintenance::Detached, ..Default::default() };
        let store = Store::discover(repo, options).expect("open the store");
        let who = Identity { name: "Test".into(), email: "test@example.com".into() };
        // The first write crosses the threshold and hands the gc to git; the writes after it
        // land while that gc may still be packing.
        for n in 0..40u32 {
            let bytes = format!("record {n}\n").into_bytes();
            let record = (Kind::Fact, RecordId::of_bytes(&bytes), bytes);
            let out = store.write_records(&[record], "neo: add", &who, Timestamp(1_700_000_000 + i64::from(n)), false);
            assert_eq!(out.expect("the write lands").added, 1);
        }
        // git's background gc packs the reachable loose objects (and then prunes, and lets go
        // of its lock); wait for both, so that nothing outlives the test.
        let started = std::time::Instant::now();
        while loose_objects(repo) >= 1_500 || repo.join(".git/gc.pid").exists() {
            assert!(started.elapsed() < Duration::from_secs(120), "the background gc never finished");
            std::thread::sleep(Duration::from_millis(100));
        }
        let commits = git(repo, &["rev-list", "--count", store.ref_name()], None);
        assert_eq!(commits, "40", "every write is on the memory ref");
        git(repo, &["fsck", "--no-dangling"], None);
        // It ran below this process's priority (the requests that go on meanwhile come first).
        // A process's nice value is the 19th field of its stat line, the 17th after its name.
        let nice = |stat: &str| -> i32 {
            let fields: Vec<&str> = stat.rsplit_once(") ").expect("a stat line").1.split(' ').collect();
            fields[16].parse().expect("a nice value")
        };
        let ours = nice(&std::fs::read_to_string("/proc/self/stat").expect("our stat"));
        let gc = nice(&std::fs::read_to_string(repo.join(".git/gc-stat")).expect("the hook ran"));
        assert!(gc >= (ours + BACKGROUND_NICE).min(19), "the gc ran at nice {gc}, this process at {ours}");
    }

    #[test]
    fn a_lock_file_is_cleared_only_when_no_git_neo_writer_holds_the_writers_lock() {
        let dir = crate::store::test_repo();
        let store = store_at(dir.path(), 300);
        let lock = store.lock_path();
        std::fs::create_dir_all(lock.parent().expect("refs/heads")).expect("refs/heads");
        std::fs::write(&lock, "").expect("plant a lock");
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&lock).and_then(|f| f.set_modified(old)).expect("age it");

        // Another writer is inside an update (it holds the writers' lock): its lock file is live,
        // however old, and the write waits and then says which lock it waited for.
        let held = store.writers_lock().expect("take the writers' lock");
        let other = std::thread::scope(|s| s.spawn(|| write(&store_at(dir.path(), 300), 1)).join());
        match other.expect("no panic") {
            Err(Error::Locked { lock: waited_for, .. }) => assert!(waited_for.ends_with("ref-write.lock")),
            other => panic!("expected a lock error, got {other:?}"),
        }
        assert!(lock.exists(), "never cleared under a live writer");
        drop(held);

        // Nobody holds it: the lock file was abandoned, and the write clears it and lands.
        let landed = write(&store, 2).expect("the write lands");
        assert!(landed.commit.is_some());
        assert!(!lock.exists());
    }
}
