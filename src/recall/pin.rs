//! PURE. A live session's view of memory: what it had seen when it started (and its own writes
//! since), so that its stable part does not change under it (docs/scopes.md, "Sessions that stay
//! put").
//!
//! - **Constraints** are shown as they stood when the session started: a constraint another
//!   writer added since is not merged in, and one another writer superseded or forgot since
//!   stays in force for the session ([`Pin::as_started`]).
//! - **Everything else** is answered from memory as it is now, but a record the session had not
//!   seen is marked `new_since_session`.
//! - **Stale:** when records the session has not seen exist, every answer carries [`Stale`]: a
//!   one-line summary naming what changed, and how to refresh (the front end says how).
//! - **Own writes** count as seen at once: the session sees what it wrote.

use crate::record::{FactType, Kind, RecordId, Timestamp};
use crate::state::{Entry, Status};
use serde::Serialize;
use std::collections::HashSet;

/// What a session has seen: every record of its memories when it started, and its own writes.
#[derive(Clone, Debug)]
pub struct Pin {
    /// What it had seen when it started: shared, never changed (a copy of the pin, as a write
    /// makes, does not copy it).
    base: std::sync::Arc<Base>,
    /// What it took in since: its own writes, a handful.
    own: HashSet<RecordId>,
    /// When the session started (or last refreshed).
    pub since: Timestamp,
}

/// Every record a session had seen when it started, under a version no other base of this
/// process shares: what is worked out from a base alone is kept under its version
/// ([`crate::state::State::with_pinned_rows`]).
#[derive(Debug)]
struct Base {
    seen: HashSet<RecordId>,
    version: u64,
}

impl Pin {
    /// A session that starts at `since` having seen `seen`.
    pub fn new(seen: HashSet<RecordId>, since: Timestamp) -> Pin {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let version = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Pin { base: std::sync::Arc::new(Base { seen, version }), own: HashSet::new(), since }
    }

    /// The session wrote these (or took them in).
    pub fn add(&mut self, ids: impl IntoIterator<Item = RecordId>) {
        for id in ids {
            if !self.base.seen.contains(&id) {
                self.own.insert(id);
            }
        }
    }

    /// The version of what the session had seen when it started: equal versions, equal sets.
    pub fn version(&self) -> u64 {
        self.base.version
    }

    /// Whether the session had seen record `id` when it started.
    pub fn started_with(&self, id: &RecordId) -> bool {
        self.base.seen.contains(id)
    }

    /// Whether the session took record `id` in since it started (its own write).
    pub fn took_in(&self, id: &RecordId) -> bool {
        self.own.contains(id)
    }

    /// Whether the session has seen record `id`.
    pub fn has_seen(&self, id: &RecordId) -> bool {
        self.started_with(id) || self.took_in(id)
    }

    /// How many records the session has seen.
    pub fn len(&self) -> usize {
        self.base.seen.len() + self.own.len()
    }

    /// Whether it has seen none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `e` was in force as this session sees it: seen, and either valid now or made
    /// invalid only by records the session has not seen (another writer's, since it started).
    pub fn as_started(&self, e: &Entry) -> bool {
        if !self.has_seen(&e.id) {
            return false;
        }
        if e.status == Status::Valid {
            return true;
        }
        e.retracted_by.iter().chain(&e.superseded_by).all(|by| !self.has_seen(by))
    }
}

/// One record the session has not seen.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub id: RecordId,
    pub kind: Kind,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub fact_type: Option<FactType>,
    pub summary: String,
    pub at: Timestamp,
}

/// Memory changed under a live session.
#[derive(Clone, Debug, Serialize)]
pub struct Stale {
    /// When the session started (or last refreshed).
    pub since: Timestamp,
    /// One line: what changed, the constraints and facts named.
    pub summary: String,
    /// The records it has not seen, newest first (at most [`SHOWN`]).
    pub changes: Vec<Change>,
    /// How many more there are.
    pub more: usize,
    /// How to take them in, said by the front end (`refresh` tool, `git neo session refresh`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub refresh: String,
}

/// Changes listed in a [`Stale`].
pub const SHOWN: usize = 10;

/// How many are named in the one-line summary.
const NAMED: usize = 3;

/// What `unseen` (records the session has not seen, any order) says to the session; `None`
/// when there are none.
pub fn stale(mut unseen: Vec<Change>, since: Timestamp) -> Option<Stale> {
    if unseen.is_empty() {
        return None;
    }
    unseen.sort_by(|a, b| b.at.cmp(&a.at).then(a.id.cmp(&b.id)));
    let constraints = unseen.iter().filter(|c| c.fact_type == Some(FactType::Constraint)).count();
    let facts = unseen.iter().filter(|c| c.kind == Kind::Fact).count() - constraints;
    let others = unseen.len() - constraints - facts;
    let mut parts = Vec::new();
    let mut count = |n: usize, one: &str, many: &str| {
        if n > 0 {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    };
    count(constraints, "new constraint", "new constraints");
    count(facts, "new fact", "new facts");
    count(others, "other record", "other records");
    // Constraints first: they are what the session holds still.
    let mut named: Vec<&Change> = unseen.iter().filter(|c| c.fact_type == Some(FactType::Constraint)).collect();
    named.extend(unseen.iter().filter(|c| c.kind == Kind::Fact && c.fact_type != Some(FactType::Constraint)));
    let names: Vec<String> = named
        .iter()
        .take(NAMED)
        .map(|c| {
            let subject: String = crate::display::escape(&c.summary).chars().take(80).collect();
            format!("{} {} \"{subject}\"", c.fact_type.map_or("record", |t| t.as_str()), c.id.short())
        })
        .collect();
    let summary = format!(
        "memory changed since this session started at {since}: {}{}",
        parts.join(", "),
        if names.is_empty() { String::new() } else { format!(" ({})", names.join("; ")) }
    );
    let more = unseen.len().saturating_sub(SHOWN);
    unseen.truncate(SHOWN);
    Some(Stale { since, summary, changes: unseen, more, refresh: String::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Fact, Payload, Record};

    fn entry(n: u8, status: Status, by: Option<RecordId>) -> Entry {
        let rec = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact::new(FactType::Constraint, format!("c{n}"))),
            author: "a <a@x>".into(),
            created_at: Timestamp(n as i64),
            body: String::new(),
        };
        let mut e = Entry::new(RecordId::of_bytes(&[n]), rec, status, crate::record::Milli(700));
        e.superseded_by = by.into_iter().collect();
        e
    }

    #[test]
    fn a_constraint_stands_for_the_session_until_its_own_write_replaces_it() {
        let other = RecordId::of_bytes(b"other");
        let mine = RecordId::of_bytes(b"mine");
        let old = entry(1, Status::Superseded, Some(other));
        let mut pin = Pin::new([old.id].into_iter().collect(), Timestamp(0));
        assert!(pin.as_started(&old), "superseded by a record the session has not seen");
        assert!(!pin.as_started(&entry(2, Status::Valid, None)), "new to the session");
        let replaced_by_me = entry(3, Status::Superseded, Some(mine));
        pin.add([replaced_by_me.id, mine]);
        assert!(!pin.as_started(&replaced_by_me), "its own write is seen at once");
    }

    #[test]
    fn stale_names_new_constraints_first() {
        let c = |n: u8, t: FactType| Change {
            id: RecordId::of_bytes(&[n]),
            kind: Kind::Fact,
            fact_type: Some(t),
            summary: format!("subject {n}"),
            at: Timestamp(n as i64),
        };
        assert!(stale(Vec::new(), Timestamp(0)).is_none());
        let s = stale(vec![c(5, FactType::Pattern), c(1, FactType::Constraint)], Timestamp(0)).expect("stale");
        assert!(s.summary.contains("1 new constraint, 1 new fact"), "{}", s.summary);
        assert!(
            s.summary.find("subject 1").expect("subject 1 listed")
                < s.summary.find("subject 5").expect("subject 5 listed"),
            "{}",
            s.summary
        );
    }
}
