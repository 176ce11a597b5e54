//! A live session's view of memory (`recall::pin`): recall keeps the session's constraints as
//! they stood when it started and says when memory changed under it; `refresh` takes the changes
//! in. Two kinds of live session:
//! - **an MCP connection**: the server starts one per client session and holds it in memory; its
//!   own writes are the ones made through it;
//! - **kept in the worktree** ([`LiveKey`]): a CLI working session (`git neo session start`) or
//!   a prompt-hook conversation, read back by every command of that worktree from a small file
//!   in its git directory (`layout::live_sessions`) that names the memory tips it started at.
//!   Every write made from the worktree counts as its own (the front end calls
//!   [`Session::keep_own_writes`] after each command).

use crate::api::memory::Memory;
use crate::api::session::LivePin;
use crate::api::session::Session;
use crate::error::{Error, Result};
use crate::recall::pin::{self, Change, Pin, Stale};
use crate::record::{Kind, Payload, RecordId, Timestamp};
use crate::scope::Scope;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// A live session kept in the worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveKey {
    /// The CLI working session of this name (`git neo session start`).
    Working(String),
    /// A prompt-hook conversation, by the id the agent gives it.
    Conversation(String),
}

impl LiveKey {
    /// Its file's name: the id kept to letters, digits, `-` and `_` (at most 64 of them).
    fn file_name(&self) -> String {
        let (kind, id) = match self {
            LiveKey::Working(n) => ("session", n.as_str()),
            LiveKey::Conversation(c) => ("conversation", c.as_str()),
        };
        let safe: String =
            id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(64).collect();
        format!("{kind}-{safe}.json")
    }
}

/// A worktree live session on disk: when it started, the memory tips it had seen (per scope),
/// and the records written from the worktree since.
#[derive(Default, Serialize, Deserialize)]
struct LiveFile {
    since: String,
    tips: BTreeMap<String, Vec<String>>,
    own: Vec<String>,
}

/// The most a live file may hold before it is read (local bookkeeping, but bounded all the same).
const MAX_LIVE_FILE: u64 = 16 << 20;

/// Conversations idle this long are forgotten when another begins.
const CONVERSATION_DAYS: u64 = 7;

/// What `refresh` took in.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Refreshed {
    /// The session's new start.
    pub since: Timestamp,
    /// What it had not seen before, now taken in (`None`: nothing had changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_in: Option<Stale>,
}

impl Session {
    /// Start a live session now: every record of the memories recall reads counts as seen, and
    /// the session's own writes from now on count as seen when written.
    pub fn begin_live(&mut self) -> Result<()> {
        let scopes = self.recall_scopes(false)?;
        let mut seen = HashSet::new();
        for scope in &scopes {
            let memory = self.memory_of(scope)?;
            seen.extend(memory.state().entries.keys().copied());
            memory.written.clear();
        }
        self.pin =
            Some(LivePin { pin: Arc::new(Pin::new(seen, self.now())), stale: None, unsaved: Vec::new(), key: None });
        Ok(())
    }

    fn live_dir(&self) -> Result<std::path::PathBuf> {
        // A warm session reads it from its open project memory: opening the repository again
        // cost every write through the server 0.5 ms.
        if let Some(m) = self.parts.get(&Scope::Project).and_then(|p| p.memory.as_ref()) {
            return Ok(crate::layout::live_sessions(m.store().git_dir()));
        }
        Ok(crate::layout::live_sessions(self.project_store()?.git_dir()))
    }

    /// Start the worktree live session `key` now (again, if it existed): kept on disk, so that
    /// every later command of this worktree answers at it.
    pub fn begin_kept_live(&mut self, key: &LiveKey) -> Result<()> {
        self.begin_live()?;
        let scopes = self.recall_scopes(false)?;
        let mut file = LiveFile { since: self.now().to_string(), ..LiveFile::default() };
        for scope in &scopes {
            file.tips.insert(scope.to_string(), self.memory_of(scope)?.tip_ids());
        }
        let dir = self.live_dir()?;
        if matches!(key, LiveKey::Conversation(_)) {
            forget_idle_conversations(&dir);
        }
        write_live(&dir.join(key.file_name()), &file)?;
        if let Some(p) = self.pin.as_mut() {
            p.key = Some(key.clone());
        }
        Ok(())
    }

    /// Answer at the worktree live session `key` from now on (this command): read back what it
    /// had seen; a session without a file (or with one that cannot be read) begins now.
    pub fn resume_live(&mut self, key: &LiveKey) -> Result<()> {
        let path = self.live_dir()?.join(key.file_name());
        let file = std::fs::metadata(&path)
            .ok()
            .filter(|m| m.len() <= MAX_LIVE_FILE)
            .and_then(|_| std::fs::read(&path).ok())
            .and_then(|b| serde_json::from_slice::<LiveFile>(&b).ok());
        let Some(file) = file else { return self.begin_kept_live(key) };
        let Some(since) = Timestamp::parse(&file.since) else { return self.begin_kept_live(key) };
        let mut seen: HashSet<RecordId> = file.own.iter().filter_map(|h| RecordId::from_hex(h)).collect();
        for (scope, commits) in &file.tips {
            let Ok(scope) = self.places().parse(scope) else { continue };
            let Ok(store) = self.store_of(&scope) else { continue };
            for c in commits {
                // A tip this clone no longer has (a purge rewrote the history) names nothing: its
                // records count as new, and a refresh starts the session again.
                let Ok(commit) = crate::store::ObjectId::from_hex(c.as_bytes()) else { continue };
                let Ok(tree) = store.tree_of(commit) else { continue };
                let Ok((entries, _)) = store.entries_of_tree(tree) else { continue };
                seen.extend(entries.iter().filter_map(|e| e.name_id));
            }
        }
        self.pin = Some(LivePin {
            pin: Arc::new(Pin::new(seen, since)),
            stale: None,
            unsaved: Vec::new(),
            key: Some(key.clone()),
        });
        Ok(())
    }

    /// Take in what changed under the worktree live session `key` (`git neo session refresh`).
    pub fn refresh_kept_live(&mut self, key: &LiveKey) -> Result<Refreshed> {
        self.resume_live(key)?;
        let scopes = self.recall_scopes(false)?;
        let taken_in = self.live_view(&scopes)?.and_then(|(_, s)| s);
        self.begin_kept_live(key)?;
        Ok(Refreshed { since: self.now(), taken_in })
    }

    /// Forget the worktree live session `key` (its working session was dropped).
    pub fn end_kept_live(&mut self, key: &LiveKey) -> Result<()> {
        let _ = std::fs::remove_file(self.live_dir()?.join(key.file_name()));
        Ok(())
    }

    /// Keep what this process wrote as the own writes of every live session of this worktree
    /// (called by the front end after each command), and let a worktree session's pin go (the
    /// next command reads it again; an MCP connection's stays).
    pub fn keep_own_writes(&mut self) -> Result<()> {
        let mut own: Vec<RecordId> = Vec::new();
        for part in self.parts.values_mut() {
            if let Some(m) = part.memory.as_mut() {
                own.append(&mut m.written);
            }
        }
        if let Some(p) = self.pin.as_mut().filter(|p| p.key.is_some()) {
            own.append(&mut p.unsaved);
        }
        if self.pin.as_ref().is_some_and(|p| p.key.is_some()) {
            self.pin = None;
        }
        if own.is_empty() {
            return Ok(());
        }
        let Ok(dir) = self.live_dir() else { return Ok(()) };
        let Ok(files) = std::fs::read_dir(&dir) else { return Ok(()) };
        for f in files.flatten() {
            let path = f.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let Some(mut file) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<LiveFile>(&b).ok())
            else {
                continue;
            };
            let held: HashSet<String> = file.own.iter().cloned().collect();
            file.own.extend(own.iter().map(|id| id.to_hex()).filter(|h| !held.contains(h)));
            write_live(&path, &file)?;
        }
        Ok(())
    }

    /// Take in everything memory holds now (the MCP `refresh` tool): the session starts again
    /// from here; the answer says what it had not seen.
    pub fn refresh_live(&mut self) -> Result<Refreshed> {
        let scopes = self.recall_scopes(false)?;
        let taken_in = self.live_view(&scopes)?.and_then(|(_, s)| s);
        self.begin_live()?;
        let since = self.now();
        Ok(Refreshed { since, taken_in })
    }

    /// What changed under the live session, if anything (`None` without one): what a front end
    /// adds to every answer, not only recall's.
    pub fn live_stale(&mut self) -> Result<Option<Stale>> {
        if self.pin.is_none() {
            return Ok(None);
        }
        let scopes = self.recall_scopes(false)?;
        Ok(self.live_view(&scopes)?.and_then(|(_, s)| s))
    }

    /// Hand the live session's pin out (a front end serving several sessions keeps one each).
    pub fn take_live(&mut self) -> Option<LivePin> {
        self.pin.take()
    }

    /// Put a session's pin back (`None`: no live session).
    pub fn put_live(&mut self, pin: Option<LivePin>) {
        self.pin = pin;
    }

    /// Whether a live session is started.
    pub fn is_live(&self) -> bool {
        self.pin.is_some()
    }

    /// The live session's pin with its own writes taken in, and what changed under it in
    /// `scopes` (outcomes aside: they only move confidence). `None` without a live session.
    pub(super) fn live_view(&mut self, scopes: &[Scope]) -> Result<Option<(Arc<Pin>, Option<Stale>)>> {
        let Session { pin: live, parts, .. } = self;
        let Some(live) = live.as_mut() else { return Ok(None) };
        let mut own = Vec::new();
        for part in parts.values_mut() {
            if let Some(m) = part.memory.as_mut() {
                own.append(&mut m.written);
            }
        }
        if !own.is_empty() {
            if live.key.is_some() {
                live.unsaved.extend(own.iter().copied());
            }
            let fresh = own.iter().filter(|id| !live.pin.has_seen(id)).collect::<HashSet<_>>().len();
            Arc::make_mut(&mut live.pin).add(own);
            // Grown by the session's own records alone, the memories hold nothing else new to it:
            // the notice stands, and is not worked out again over every record.
            if let Some((n, _)) = live.stale.as_mut() {
                *n += fresh;
            }
        }
        let memories: Vec<&Memory> = scopes.iter().filter_map(|s| parts.get(s)?.memory.as_ref()).collect();
        let total: usize = memories.iter().map(|m| m.state().entries.len()).sum();
        if live.stale.as_ref().map(|(n, _)| *n) != Some(total) {
            let mut listed = HashSet::new();
            let mut unseen = Vec::new();
            for memory in memories {
                for e in memory.state().entries.values() {
                    if e.record.kind == Kind::Outcome || live.pin.has_seen(&e.id) || !listed.insert(e.id) {
                        continue;
                    }
                    unseen.push(Change {
                        id: e.id,
                        kind: e.record.kind,
                        fact_type: match &e.record.payload {
                            Payload::Fact(f) => Some(f.fact_type),
                            _ => None,
                        },
                        summary: e.record.summary(),
                        at: e.record.created_at,
                    });
                }
            }
            live.stale = Some((total, pin::stale(unseen, live.pin.since)));
        }
        Ok(Some((live.pin.clone(), live.stale.as_ref().and_then(|(_, s)| s.clone()))))
    }
}

/// Write a live file through a temporary file renamed into place.
fn write_live(path: &std::path::Path, file: &LiveFile) -> Result<()> {
    let io = |e| Error::Io { context: format!("writing {}", path.display()), source: e };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let bytes = serde_json::to_vec(file)
        .map_err(|e| Error::Io { context: format!("encoding {}", path.display()), source: e.into() })?;
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// Remove the conversations of `dir` untouched for [`CONVERSATION_DAYS`].
fn forget_idle_conversations(dir: &std::path::Path) {
    let Ok(files) = std::fs::read_dir(dir) else { return };
    let limit = std::time::Duration::from_secs(CONVERSATION_DAYS * 86_400);
    for f in files.flatten() {
        let old = f
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > limit);
        if old && f.file_name().to_string_lossy().starts_with("conversation-") {
            let _ = std::fs::remove_file(f.path());
        }
    }
}
