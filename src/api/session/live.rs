//! A live session's view of memory (`recall::pin`): a front end that serves one agent session
//! (an MCP connection) starts it; recall then keeps the session's constraints as they stood and
//! says when memory changed under it; `refresh` takes the changes in.

use super::*;
use crate::recall::pin::{self, Change, Pin, Stale};
use crate::record::{Kind, Payload};
use std::collections::HashSet;

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
            memory.written.get_or_insert_with(Vec::new).clear();
        }
        self.pin = Some(LivePin { pin: Arc::new(Pin::new(seen, self.now())), stale: None });
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
            if let Some(written) = part.memory.as_mut().and_then(|m| m.written.as_mut()) {
                own.append(written);
            }
        }
        if !own.is_empty() {
            Arc::make_mut(&mut live.pin).add(own);
            live.stale = None;
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
