//! What a session does with whole scopes: sync each scope through its own remote, working
//! sessions (start, promote, drop), and the report `git neo scopes` prints.

use crate::api::session::Session;
use crate::api::share::scopes::{self, ScopeInfo};
use crate::api::share::{self, SyncOutcome};
use crate::api::write::AddOutcome;
use crate::api::write::AddRequest;
use crate::error::{Error, Result};
use crate::record::{Fact, Kind, Payload, RecordId};
use crate::scope::{self, Scope};
use crate::state::Status;

/// The sessions of a clone (name, records) and the current one's name.
pub type Sessions = (Vec<SessionInfo>, Option<String>);

/// One session of this clone.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SessionInfo {
    pub name: String,
    /// Records on its ref.
    pub records: usize,
    /// The worktrees (their roots) where it is the current session.
    pub current_in: Vec<std::path::PathBuf>,
}

/// What `git neo session promote` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Promotion {
    pub session: String,
    /// The scope the facts went to.
    pub to: String,
    /// Each valid fact of the session and what became of it in the target scope.
    pub facts: Vec<Promoted>,
    /// Whether the session ref was deleted afterwards.
    pub dropped: bool,
}

/// One promoted fact.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Promoted {
    /// Its id in the session.
    pub from: RecordId,
    #[serde(flatten)]
    pub outcome: AddOutcome,
}

/// The write request that copies a session's fact into another scope, naming where it came from
/// with two tags (`session:<name>`, `from:<first 16 hex digits of its id>`). Links to other
/// records of the session are not carried: they would point nowhere once the session is dropped.
fn promotion_request(fact: &Fact, body: &str, session: &str, id: RecordId) -> AddRequest {
    let mut tags = fact.tags.clone();
    let session_tag: String = format!("session:{}", session.to_lowercase()).chars().take(64).collect();
    tags.push(session_tag);
    tags.push(format!("from:{}", &id.to_string()[..16]));
    AddRequest {
        fact_type: fact.fact_type.to_string(),
        subject: fact.subject.clone(),
        body: body.to_string(),
        area: (fact.scope != "session").then(|| fact.scope.clone()),
        tags,
        key: fact.key.clone(),
        confidence: Some(fact.confidence.as_f64()),
        provenance: Some(fact.provenance.to_string()),
        anchors: fact.anchors.iter().map(|a| a.spec()).collect(),
        valid_from: fact.valid_from.map(|t| t.to_string()),
        valid_to: fact.valid_to.map(|t| t.to_string()),
        suggestion: fact.suggestion.clone(),
        ..Default::default()
    }
}

impl Session {
    /// Sync the target scope through its remote: the project and the user memory fetch, merge
    /// and push with a lease; the org memory verifies what it fetched first, and in review mode
    /// pushes waiting proposals instead of its memory branch. A session is local to this clone.
    pub fn sync(&mut self, remote: Option<&str>) -> Result<SyncOutcome> {
        match self.target() {
            Scope::Session(name) => Err(Error::invalid_with_hint(
                "scope",
                format!("session:{name} lives only in this clone"),
                format!("`git neo session promote {name}` moves its facts to a shared scope"),
            )),
            Scope::Org => {
                let (memory, wc) = self.writing()?;
                share::sync_org(memory, &wc)
            }
            Scope::User => {
                let store = self.store()?;
                if store.remote_url(scopes::REMOTE).is_none() && remote.is_none() {
                    return Err(Error::Config {
                        key: crate::config::USER_URL.into(),
                        message: "is not set, so the user memory has no remote to sync with; \
                                  `git config --global neo.user.url <url>` names one"
                            .into(),
                    });
                }
                let wc = self.write_context(&store)?;
                let outcome = share::sync(&store, remote.or(Some(scopes::REMOTE)), &wc)?;
                scopes::stamp_fetch(&store)?;
                Ok(outcome)
            }
            Scope::Project => {
                let store = self.store()?;
                let wc = self.write_context(&store)?;
                share::sync(&store, remote, &wc)
            }
        }
    }

    /// The scopes besides the project that a plain `git neo sync` also syncs: the org memory when
    /// it is configured, the user memory when it exists and has a remote.
    pub fn shared_scopes(&self) -> Result<Vec<Scope>> {
        let places = self.places();
        let mut out = Vec::new();
        if places.org_configured(&places.project()?) {
            out.push(Scope::Org);
        }
        if places.data_dir.is_some() {
            if let Some(user) = places.open(&Scope::User, false)? {
                if user.remote_url(scopes::REMOTE).is_some() {
                    out.push(Scope::User);
                }
            }
        }
        Ok(out)
    }

    /// Start a working session: create its ref and make it this worktree's current session
    /// (what `--scope session` means here; another worktree of the clone keeps its own). The name defaults to one made from the clock.
    pub fn start_session(&mut self, name: Option<&str>) -> Result<String> {
        let name = match name {
            Some(n) => n.trim().to_string(),
            None => format!("s{}", self.now().to_string().replace(['-', ':'], "").to_lowercase()),
        };
        scope::check_session_name(&name).map_err(|m| Error::invalid("name", m))?;
        let scope = Scope::Session(name.clone());
        let store = self.store_of(&scope)?;
        let wc = self.write_context(&store)?;
        let mut memory = self.load_memory_of(&scope)?;
        memory.init(&wc)?;
        let current = crate::layout::current_session(self.places().project()?.git_dir());
        if let Some(dir) = current.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Io { context: format!("creating {}", dir.display()), source: e })?;
        }
        std::fs::write(&current, format!("{name}\n"))
            .map_err(|e| Error::Io { context: format!("writing {}", current.display()), source: e })?;
        Ok(name)
    }

    /// The sessions of this clone, with their record counts, and which is current.
    pub fn sessions(&mut self) -> Result<Sessions> {
        let places = self.places();
        let worktrees: Vec<(std::path::PathBuf, Option<String>)> = places
            .project()?
            .worktrees()
            .into_iter()
            .map(|(root, git_dir)| (root, crate::api::share::scopes::session_named_in(&git_dir)))
            .collect();
        let mut out = Vec::new();
        for s in places.readable()? {
            if let Scope::Session(name) = &s {
                let records = self.memory_of(&s)?.state().entries.len();
                let current_in = worktrees
                    .iter()
                    .filter(|(_, current)| current.as_deref() == Some(name.as_str()))
                    .map(|(root, _)| root.clone())
                    .collect();
                out.push(SessionInfo { name: name.clone(), records, current_in });
            }
        }
        Ok((out, places.current_session()))
    }

    /// Copy the valid facts of session `name` into `to` as new records (de-duplicated and
    /// superseding there as any write does), then drop the session unless `keep`. Nothing is
    /// dropped when a write fails.
    pub fn promote(&mut self, name: &str, to: &Scope, keep: bool) -> Result<Promotion> {
        scope::check_session_name(name).map_err(|m| Error::invalid("session", m))?;
        if matches!(to, Scope::Session(_)) {
            return Err(Error::invalid("to", "promote moves facts to project, user or org; not to another session"));
        }
        let from = Scope::Session(name.to_string());
        if self.places().project()?.refs_with_prefix(&from.session_ref().unwrap_or_default())?.is_empty() {
            return Err(Error::invalid_with_hint(
                "session",
                format!("there is no session {name:?}"),
                "`git neo session list` shows them",
            ));
        }
        let requests: Vec<(RecordId, AddRequest)> = {
            let memory = self.memory_of(&from)?;
            memory
                .state()
                .iter()
                .filter(|e| e.status == Status::Valid && e.record.kind == Kind::Fact)
                .filter_map(|e| match &e.record.payload {
                    Payload::Fact(f) => Some((e.id, promotion_request(f, &e.record.body, name, e.id))),
                    _ => None,
                })
                .collect()
        };
        let before = self.scope().cloned();
        self.set_scope(Some(to.clone()));
        let mut facts = Vec::new();
        let mut failed = None;
        for (id, req) in requests {
            match self.add(&req) {
                Ok(outcome) => facts.push(Promoted { from: id, outcome }),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.set_scope(before);
        if let Some(e) = failed {
            return Err(e);
        }
        let dropped = !keep && self.drop_session(name)?;
        Ok(Promotion { session: name.to_string(), to: to.to_string(), facts, dropped })
    }

    /// Delete session `name`'s ref and its caches (nothing else: its objects stay until git's own
    /// garbage collection). False when there was no such session.
    pub fn drop_session(&mut self, name: &str) -> Result<bool> {
        scope::check_session_name(name).map_err(|m| Error::invalid("session", m))?;
        let scope = Scope::Session(name.to_string());
        let store = self.store_of(&scope)?;
        let Some(tip) = store.local_tip()? else { return Ok(false) };
        if !store.delete_ref(tip)? {
            return Err(Error::Contention { ref_name: store.ref_name().into(), attempts: 1 });
        }
        self.forget_scope(&scope);
        let caches = store.caches();
        let dir = caches.session_index(name);
        if let Some(session_dir) = dir.parent().filter(|d| d.exists()) {
            std::fs::remove_dir_all(session_dir)
                .map_err(|e| Error::Io { context: format!("removing {}", session_dir.display()), source: e })?;
        }
        // Current nowhere any more: in whichever worktree it was.
        for (_, git_dir) in store.worktrees() {
            let current = crate::layout::current_session(&git_dir);
            if std::fs::read_to_string(&current).is_ok_and(|c| c.trim() == name) {
                std::fs::remove_file(&current)
                    .map_err(|e| Error::Io { context: format!("removing {}", current.display()), source: e })?;
            }
        }
        Ok(true)
    }

    /// Every scope: where it lives, its tip and size, its remote, when it last fetched, whether
    /// the remote answers (asked only with `probe`), and how it takes writes.
    pub fn scopes(&mut self, probe: bool) -> Result<Vec<ScopeInfo>> {
        let places = self.places();
        let project = places.project()?;
        let mut wanted = vec![Scope::Project, Scope::User];
        if places.org_configured(&project) {
            wanted.push(Scope::Org);
        }
        for s in places.readable()? {
            if matches!(s, Scope::Session(_)) {
                wanted.push(s);
            }
        }
        let mut out = Vec::new();
        for scope in wanted {
            let mut info = ScopeInfo {
                scope: scope.to_string(),
                location: String::new(),
                exists: false,
                tip: None,
                records: 0,
                remote: None,
                last_sync: None,
                reachable: None,
                problem: None,
                mode: None,
            };
            match places.location(&scope) {
                Ok(l) => info.location = l,
                Err(e) => {
                    info.problem = Some(e.to_string());
                    out.push(info);
                    continue;
                }
            }
            let store = match places.open(&scope, false) {
                Ok(Some(s)) => s,
                Ok(None) => {
                    out.push(info);
                    continue;
                }
                Err(e) => {
                    info.problem = Some(e.to_string());
                    out.push(info);
                    continue;
                }
            };
            info.exists = true;
            info.mode = Some(store.write_mode());
            let remote_name = match &scope {
                Scope::Project => store.default_remote().ok(),
                Scope::User | Scope::Org => store.remote_url(scopes::REMOTE).map(|_| scopes::REMOTE.to_string()),
                Scope::Session(_) => None,
            };
            info.remote = remote_name.as_deref().and_then(|r| store.remote_url(r));
            if matches!(scope, Scope::User | Scope::Org) {
                info.last_sync = scopes::last_fetch(&store);
            }
            if let (true, Some(r)) = (probe, remote_name.as_deref()) {
                let answer = store.probe_remote(r);
                info.reachable = Some(answer.is_ok());
                if let Err(e) = answer {
                    info.problem = Some(format!("the remote does not answer: {e}"));
                }
            }
            match self.memory_of(&scope) {
                Ok(m) => {
                    info.tip = m.tips().first().map(|(_, c)| c.to_string());
                    info.records = m.state().entries.len();
                }
                Err(e) => info.problem = Some(e.to_string()),
            }
            if scope == Scope::Org {
                if let Some(why) = scopes::refused(&store) {
                    info.problem = Some(why);
                }
            }
            out.push(info);
        }
        Ok(out)
    }
}
