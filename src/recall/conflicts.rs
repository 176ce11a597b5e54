//! Two answers to one question, both current: recall never shows them without saying so. PURE.
//!
//! Two current facts of the same type and scope hold the **same slot** when they share a key, or
//! when their frames say so ([`crate::frame`]): the same identity, the same thing (the whole
//! subject phrase) and the same predicate, with something else said of it. That is exactly what
//! the write-time rule returns to the writer as a possible update (or would have applied, had it
//! been on): when the writer did not confirm it, neither supersedes the other, so recall puts
//! the newer first, flags both `conflict` naming each other and which is newer, and says how to
//! settle it with one command.

use super::Item;
use crate::frame::{compare, frame, Relation};
use crate::record::RecordId;
use crate::state::State;

/// Flag the items of `items` (one layer, best first) that hold the same slot, newer first.
///
/// A record only a fetched copy holds (`fetched`: a fork's, a remote's, not merged) is never the
/// newer of a pair with a record of this clone's own memory, whatever date it carries: a date is
/// what its writer claimed, and a stranger's claim does not outrank local evidence.
pub fn mark(items: &mut Vec<Item>, state: &State, fetched: &dyn Fn(&RecordId) -> bool) {
    let frames: Vec<_> = items.iter().map(|i| frame(&i.subject)).collect();
    let key = |id: &RecordId| state.entries.get(id).and_then(|e| e.record.as_fact()).and_then(|f| f.key.clone());
    let created = |id: &RecordId| state.entries.get(id).map(|e| (!fetched(id), e.record.created_at, *id));
    let mut pairs = Vec::new();
    for i in 0..items.len() {
        for j in i + 1..items.len() {
            let (a, b) = (&items[i], &items[j]);
            if a.fact_type != b.fact_type || a.scope != b.scope {
                continue;
            }
            let same_key = key(&a.id).is_some() && key(&a.id) == key(&b.id);
            let (older, newer) = if created(&a.id) <= created(&b.id) { (i, j) } else { (j, i) };
            // Two failures or two reviews about one thing are two events, not two answers.
            let events = a.fact_type.is_some_and(|t| t.is_event());
            let same_frame = !events && compare(&frames[older], &frames[newer]).relation != Relation::Unrelated;
            if same_key || same_frame {
                let (newer, older) = if created(&a.id) >= created(&b.id) { (i, j) } else { (j, i) };
                pairs.push((newer, older));
            }
        }
    }
    for &(newer, older) in &pairs {
        let (n, o) = (items[newer].id, items[older].id);
        // Areas are kept apart on write (the same thing in another area is only a possible
        // update), so the reader is told when the other answer is filed elsewhere: both may hold.
        let (area_n, area_o) = (where_filed(&items[newer], &items[older]), where_filed(&items[older], &items[newer]));
        let settle = format!(
            "if the newer replaces it: `git neo outdated {} --reason \"replaced by {}\"`",
            o.short(),
            n.short()
        );
        items[newer].needs_review.push(format!(
            "conflict: {}{} says otherwise about the same thing; this one is newer",
            o.short(),
            paren(&area_o)
        ));
        items[newer].conflicts_with.push(o);
        items[older].needs_review.push(format!(
            "conflict: {} (newer{}) says otherwise about the same thing; {settle}",
            n.short(),
            comma(&area_n)
        ));
        items[older].conflicts_with.push(n);
    }
    // The newer of each pair goes first: just before the older, if it ranked below it.
    for &(newer, older) in &pairs {
        let (n, o) = (items[newer].id, items[older].id);
        let (pn, po) = (pos(items, n), pos(items, o));
        if pn > po {
            let it = items.remove(pn);
            items.insert(po, it);
        }
    }
}

/// `in area X` (or `filed under no area`) when `it` is filed elsewhere than `other`, else empty.
fn where_filed(it: &Item, other: &Item) -> String {
    match (it.area == other.area, it.area.is_empty()) {
        (true, _) => String::new(),
        (false, true) => "filed under no area".into(),
        (false, false) => format!("in area {}", it.area),
    }
}

fn comma(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(", {s}")
    }
}

fn paren(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" ({s})")
    }
}

fn pos(items: &[Item], id: RecordId) -> usize {
    items.iter().position(|i| i.id == id).unwrap_or(0)
}
