//! Use case: `git neo verify`. Proves the memory's integrity and lists every problem found.
//!
//! Checks, all run to the end (never stopping at the first problem):
//! - `FORMAT` exists and names a known version;
//! - layout: only `FORMAT` and the five kind directories at the root, two-hex-digit fan-out
//!   directories, `<id>.md` files in the fan-out directory of their id;
//! - identity: each file's name is the BLAKE3 hash of its bytes;
//! - each record parses and validates (every problem, each naming its field);
//! - the write-time filter (`redact`) finds no secret or injection-like text;
//! - every id a record names exists;
//! - supersessions form no cycle;
//! - with a range: every commit only adds records (removals are allowed only as documented purges,
//!   a `Neo-Purge: <id>` trailer naming the record), and each message is well-formed.

use crate::error::{Error, Result};
use crate::record::{Kind, Payload, Record, RecordId};
use crate::store::ObjectId;
use crate::store::Store;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One problem found by verify.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The path on the memory ref (`facts/3f/3f2a….md`, `FORMAT`, or a directory).
    pub path: String,
    /// The field, or `file`, `layout`, `commit`.
    pub field: String,
    pub message: String,
    /// The commit the problem was found in, for range checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// What verify looked at and what it found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub ref_name: String,
    pub commit: String,
    /// The remote-tracking copies checked besides (`refs/remotes/<remote>/<branch>`): recall
    /// reads them, so verify does too; their problems are named `<copy>:<path>`.
    pub copies: Vec<String>,
    pub records: usize,
    pub commits_checked: usize,
    pub problems: Vec<Finding>,
    /// Documented exceptions seen (purges), which are not problems.
    pub notes: Vec<String>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The most distinct anchor commits verify checks against HEAD.
pub const MAX_ANCHOR_COMMITS: usize = 1_000;

/// Facts anchored at a commit HEAD does not contain (a branch not merged, a rewritten history):
/// outcome detection scans them from when they were written instead. Not a problem of the
/// memory's integrity, so a note; `git neo confirm` re-anchors them.
fn off_branch_anchors(store: &Store, records: &[crate::store::LoadedRecord]) -> Result<Vec<String>> {
    let Some(head) = store.head_commit()? else { return Ok(Vec::new()) };
    let mut verdict: HashMap<ObjectId, bool> = HashMap::new();
    let mut notes = Vec::new();
    // A person's confirmation re-anchors a fact at the commit it names: the latest one counts.
    let mut confirmed: HashMap<RecordId, (crate::record::Timestamp, &str)> = HashMap::new();
    for r in records {
        if let Payload::Outcome(o) = &r.record.payload {
            if let (crate::state::CONFIRMED, Some(c)) = (o.signal.as_str(), o.commits.first()) {
                let e = confirmed.entry(o.target).or_insert((r.record.created_at, c));
                if r.record.created_at >= e.0 {
                    *e = (r.record.created_at, c);
                }
            }
        }
    }
    for r in records {
        let own = r.record.as_fact().and_then(|f| f.anchors.iter().rev().find_map(|a| a.commit.as_deref()));
        let Some(commit) = confirmed.get(&r.id).map(|(_, c)| *c).or(own) else { continue };
        let Ok(commit) = ObjectId::from_hex(commit.as_bytes()) else { continue };
        if !verdict.contains_key(&commit) && verdict.len() >= MAX_ANCHOR_COMMITS {
            continue;
        }
        let on_branch = match verdict.get(&commit) {
            Some(v) => *v,
            None => {
                let v = store.has_commit(commit)? && store.is_ancestor(commit, head)?;
                verdict.insert(commit, v);
                v
            }
        };
        if !on_branch {
            notes.push(format!(
                "{}: anchored at commit {}, which HEAD does not contain; check it and re-anchor it with `git neo confirm {}`",
                Record::path(r.record.kind, &r.id),
                &commit.to_string()[..12],
                r.id.short()
            ));
        }
    }
    Ok(notes)
}

/// The longest first line of a commit message verify accepts.
pub const MAX_SUBJECT_LINE: usize = 200;

/// Verify the memory at `tip` (named `ref_name` in the report), and with `range_from` also every
/// commit between it and `tip`.
pub fn verify(
    store: &Store,
    ref_name: &str,
    tip: ObjectId,
    range_from: Option<ObjectId>,
    now: crate::record::Timestamp,
) -> Result<Report> {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let tree = store.tree_of(tip)?;
    let find = |path: &str, field: &str, message: String| Finding {
        path: path.into(),
        field: field.into(),
        message,
        commit: None,
    };

    match store.format_of_tree(tree)? {
        None => {
            problems.push(find("FORMAT", "layout", "is missing; the root of the memory tree must hold FORMAT".into()))
        }
        Some(bytes) if bytes != crate::store::format_entry().as_bytes() => problems.push(find(
            "FORMAT",
            "file",
            format!(
                "holds {:?}; this git-neo knows format {}",
                String::from_utf8_lossy(&bytes).trim(),
                crate::record::FORMAT_VERSION
            ),
        )),
        Some(_) => {}
    }

    let (entries, strays) = store.entries_of_tree(tree)?;
    for s in strays {
        for p in s.problems.0 {
            problems.push(find(&s.path, &p.field, p.message));
        }
    }
    let (records, invalid) = store.read_entries(&entries)?;
    // Ids of every record file whose name is an id, even those that do not parse: a reference to
    // a damaged record is reported once, at the damaged record.
    let present: BTreeSet<RecordId> = entries.iter().filter_map(|e| e.name_id).collect();
    for bad in invalid {
        for p in bad.problems.0 {
            problems.push(find(&bad.path, &p.field, p.message));
        }
    }
    // A record a `Neo-Purge` commit removed must stay gone: a plain `git push` or `git merge`
    // from a clone that still had it brings it back, with the purge note still in the history.
    let purge_notes = store.purged_ids(tip)?;
    for r in &records {
        if purge_notes.iter().any(|p| r.id.to_hex().starts_with(p.as_str())) {
            problems.push(find(
                &Record::path(r.record.kind, &r.id),
                "id",
                format!(
                    "{} was purged (a Neo-Purge commit names it) and is back, likely through a plain git push or merge \
                     from a clone that still had it; run `git neo purge {}` again and `git neo sync` from that clone",
                    r.id.short(),
                    r.id.short()
                ),
            ));
        }
    }
    check_records(&records, &present, &purge_notes, now, &mut problems, &mut notes);
    problems.extend(supersession_cycles(&records.iter().map(|r| (r.id, &r.record)).collect::<Vec<_>>()));

    let commits_checked = match range_from {
        Some(from) => check_range(store, from, tip, &mut problems, &mut notes)?,
        None => 0,
    };

    notes.extend(off_branch_anchors(store, &records)?);

    problems.sort_by(|a, b| (&a.path, &a.field).cmp(&(&b.path, &b.field)));
    problems.dedup();
    Ok(Report {
        ref_name: ref_name.into(),
        commit: tip.to_string(),
        copies: Vec::new(),
        records: records.len(),
        commits_checked,
        problems,
        notes,
    })
}

/// Each record's own checks: the write filter, a date ahead of the clock, a lesson patch that is
/// not what it says, and every record it names (present, purged on purpose, or in another scope).
fn check_records(
    records: &[crate::store::LoadedRecord],
    present: &BTreeSet<RecordId>,
    purged: &[String],
    now: crate::record::Timestamp,
    problems: &mut Vec<Finding>,
    notes: &mut Vec<String>,
) {
    let find = |path: &str, field: &str, message: String| Finding {
        path: path.into(),
        field: field.into(),
        message,
        commit: None,
    };
    for r in records {
        let path = Record::path(r.record.kind, &r.id);
        for p in crate::redact::check(&r.record) {
            problems.push(find(&path, &p.field, p.message));
        }
        // A record dated in the future would sort as the latest word on its subject for as long
        // as the clocks allow: nobody's clock is a day ahead.
        if let Some(p) = crate::record::validate::check_not_future(r.record.created_at, now) {
            problems.push(find(&path, &p.field, p.message));
        }
        // A lesson patch must be what it says: its hashes, its diff and its target agree.
        if let Payload::Lesson(l) = &r.record.payload {
            if let Err(why) = crate::lesson::check(l, &r.record.body) {
                problems.push(find(&path, "body", format!("is not a consistent lesson patch: {why}")));
            }
        }
        for (field, id) in r.record.references() {
            if present.contains(&id) {
                continue;
            }
            // A supersession asked for across scopes names a record of another memory.
            if let (true, Payload::Supersession(s)) = (field == "old", &r.record.payload) {
                if let Some(scope) = &s.old_scope {
                    notes.push(format!("{path}: old names {} of the {scope} memory", id.short()));
                    continue;
                }
            }
            // Records purged on purpose may still be named by others, such as the retraction
            // that hid them first.
            if purged.iter().any(|p| id.to_hex().starts_with(p.as_str())) {
                notes.push(format!(
                    "{path}: {field} names {}, which was purged (documented with Neo-Purge)",
                    id.short()
                ));
            } else {
                problems.push(find(&path, field, format!("names {}, which is not on the ref", id.short())));
            }
        }
    }
}

/// Range checks (`--range`): every commit after `from` up to `tip` has a git-neo message and only
/// adds records (a removal documented with `Neo-Purge` is a note). Returns how many were checked.
fn check_range(
    store: &Store,
    from: ObjectId,
    tip: ObjectId,
    problems: &mut Vec<Finding>,
    notes: &mut Vec<String>,
) -> Result<usize> {
    let mut commits_checked = 0;
    for c in store.commits_between(Some(from), tip)? {
        commits_checked += 1;
        let subject = c.message.lines().next().unwrap_or("");
        let at = |path: &str, field: &str, message: String| Finding {
            path: path.into(),
            field: field.into(),
            message,
            commit: Some(c.id.to_string()),
        };
        if !subject.starts_with("neo: ") || subject.len() > MAX_SUBJECT_LINE {
            problems.push(at(
                "",
                "commit",
                format!("message {subject:?} is not a git-neo message (`neo: <what happened>`, at most {MAX_SUBJECT_LINE} characters on the first line)"),
            ));
        }
        let purged: BTreeSet<String> = c
            .message
            .lines()
            .filter_map(|l| l.strip_prefix("Neo-Purge:"))
            .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
            .collect();
        let parents = if c.parents.is_empty() { vec![None] } else { c.parents.iter().map(|p| Some(*p)).collect() };
        for parent in parents {
            let parent_tree = match parent {
                Some(p) => Some(store.tree_of(p)?),
                None => None,
            };
            for change in store.diff_trees(parent_tree, Some(c.tree))? {
                if change.change == "added" {
                    continue;
                }
                let id = change.path.rsplit('/').next().and_then(|f| f.strip_suffix(".md")).unwrap_or("");
                if change.change == "removed"
                    && !id.is_empty()
                    && purged.iter().any(|p| p.len() >= 4 && id.starts_with(p.as_str()))
                {
                    notes.push(format!(
                        "commit {} purges {} (documented with Neo-Purge)",
                        &c.id.to_string()[..12],
                        change.path
                    ));
                    continue;
                }
                problems.push(at(
                    &change.path,
                    "layout",
                    format!(
                        "was {} by commit {}; memory only ever adds records (a removal needs a `Neo-Purge: <id>` trailer, see docs/security.md)",
                        change.change,
                        &c.id.to_string()[..12]
                    ),
                ));
            }
        }
    }
    Ok(commits_checked)
}

/// Supersessions `old -> new` that lead back to where they started.
fn supersession_cycles(records: &[(RecordId, &Record)]) -> Vec<Finding> {
    let mut edges: BTreeMap<RecordId, Vec<(RecordId, RecordId)>> = BTreeMap::new();
    for (id, r) in records {
        if let Payload::Supersession(s) = &r.payload {
            if let Some(new) = s.new {
                edges.entry(s.old).or_default().push((new, *id));
            }
        }
    }
    // Colour-marking DFS: 1 = on the stack, 2 = done.
    let mut colour: HashMap<RecordId, u8> = HashMap::new();
    let mut out = Vec::new();
    fn visit(
        node: RecordId,
        edges: &BTreeMap<RecordId, Vec<(RecordId, RecordId)>>,
        colour: &mut HashMap<RecordId, u8>,
        stack: &mut Vec<(RecordId, RecordId)>,
        out: &mut Vec<Finding>,
    ) {
        colour.insert(node, 1);
        for &(next, via) in edges.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
            stack.push((node, via));
            match colour.get(&next) {
                Some(1) => {
                    let start = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                    let chain: Vec<String> =
                        stack[start..].iter().map(|(n, _)| n.short()).chain(std::iter::once(next.short())).collect();
                    for (_, sup) in &stack[start..] {
                        out.push(Finding {
                            path: Record::path(Kind::Supersession, sup),
                            field: "new".into(),
                            message: format!("is part of a supersession cycle: {}", chain.join(" -> ")),
                            commit: None,
                        });
                    }
                }
                Some(_) => {}
                None => visit(next, edges, colour, stack, out),
            }
            stack.pop();
        }
        colour.insert(node, 2);
    }
    let starts: Vec<RecordId> = edges.keys().copied().collect();
    for s in starts {
        if !colour.contains_key(&s) {
            visit(s, &edges, &mut colour, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Resolve what `git neo verify` should look at: an explicit `--range a..b`, or the ref's tip.
pub fn target(store: &Store, range: Option<&str>) -> Result<Option<(String, ObjectId, Option<ObjectId>)>> {
    match range {
        Some(r) => {
            let (a, b) = r
                .split_once("..")
                .ok_or_else(|| Error::invalid("range", format!("{r:?} is not a range; use <from>..<to>")))?;
            let to = store.resolve_commit(if b.is_empty() { store.ref_name() } else { b })?;
            let from = store.resolve_commit(a)?;
            Ok(Some((r.to_string(), to, Some(from))))
        }
        None => Ok(store
            .local_tip()?
            .or(store.tips()?.first().map(|(_, c)| *c))
            .map(|tip| (store.ref_name().to_string(), tip, None))),
    }
}
