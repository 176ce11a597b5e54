//! What one commit did to the code: changed files with renames paired up, and line hunks.
//!
//! The tree comparison is gix's (through the store); line hunks come from imara-diff (the diff
//! library gix itself uses for blobs), Histogram algorithm. A deleted and an added file are paired
//! as a rename when their blobs are equal, or when at least [`RENAME_SIMILARITY`] of the deleted
//! file's lines survive in the added one (git's default rename threshold is 50%).

use crate::error::Result;
use crate::store::ObjectId;
use crate::store::{FileDiff, Store};
use imara_diff::{Algorithm, Diff, InternedInput};
use std::collections::HashMap;
use std::ops::Range;

/// Least share of an old file's lines found in a new file for the pair to count as a rename.
pub const RENAME_SIMILARITY: f64 = 0.5;

/// Files larger than this are compared as "changed" without line hunks.
pub const MAX_DIFF_BYTES: usize = 1 << 20;

/// One changed file.
#[derive(Clone, Debug)]
pub struct Change {
    /// The path before (`None`: added).
    pub old_path: Option<String>,
    /// The path after (`None`: deleted).
    pub new_path: Option<String>,
    pub old_blob: Option<ObjectId>,
    pub new_blob: Option<ObjectId>,
    /// Line hunks (0-based line index ranges, before and after); empty for adds and deletes.
    pub hunks: Vec<(Range<u32>, Range<u32>)>,
    /// The text after (empty when deleted or not UTF-8).
    pub new_text: String,
    /// The text before (empty when added or not UTF-8).
    pub old_text: String,
}

impl Change {
    /// Lines added by this change (all lines of an added file).
    pub fn added_lines(&self) -> Vec<&str> {
        let lines: Vec<&str> = self.new_text.lines().collect();
        if self.old_path.is_none() || self.old_blob.is_none() {
            return lines;
        }
        self.hunks.iter().flat_map(|(_, after)| after.clone()).filter_map(|i| lines.get(i as usize).copied()).collect()
    }
}

fn text(store: &Store, blob: Option<ObjectId>) -> Result<String> {
    match blob {
        None => Ok(String::new()),
        Some(b) => {
            let bytes = store.read_blob(b)?;
            if bytes.len() > MAX_DIFF_BYTES {
                return Ok(String::new());
            }
            Ok(String::from_utf8(bytes).unwrap_or_default())
        }
    }
}

/// Line hunks between two texts.
pub fn hunks(old: &str, new: &str) -> Vec<(Range<u32>, Range<u32>)> {
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    diff.hunks().map(|h| (h.before, h.after)).collect()
}

fn line_overlap(old: &str, new: &str) -> f64 {
    let mut have: HashMap<&str, usize> = HashMap::new();
    for l in new.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *have.entry(l).or_default() += 1;
    }
    let (mut total, mut kept) = (0usize, 0usize);
    for l in old.lines().map(str::trim).filter(|l| !l.is_empty()) {
        total += 1;
        if let Some(n) = have.get_mut(l).filter(|n| **n > 0) {
            *n -= 1;
            kept += 1;
        }
    }
    if total == 0 {
        0.0
    } else {
        kept as f64 / total as f64
    }
}

/// The changes between two trees, renames paired, with hunks for modified and renamed files.
pub fn changes(store: &Store, old_tree: Option<ObjectId>, new_tree: ObjectId) -> Result<Vec<Change>> {
    let files: Vec<FileDiff> = store.diff_files(old_tree, Some(new_tree))?;
    let mut out = Vec::new();
    let mut deleted: Vec<FileDiff> = Vec::new();
    let mut added: Vec<FileDiff> = Vec::new();
    for f in files {
        match (f.old_blob, f.new_blob) {
            (Some(_), Some(_)) => {
                let (old_text, new_text) = (text(store, f.old_blob)?, text(store, f.new_blob)?);
                out.push(Change {
                    old_path: Some(f.path.clone()),
                    new_path: Some(f.path),
                    old_blob: f.old_blob,
                    new_blob: f.new_blob,
                    hunks: hunks(&old_text, &new_text),
                    new_text,
                    old_text,
                });
            }
            (Some(_), None) => deleted.push(f),
            (None, Some(_)) => added.push(f),
            (None, None) => {}
        }
    }
    // Pair renames: exact blob matches first, then the most similar added file above the threshold.
    let mut used = vec![false; added.len()];
    for d in deleted {
        let old_text = text(store, d.old_blob)?;
        let exact = added.iter().enumerate().position(|(i, a)| !used[i] && a.new_blob == d.old_blob);
        let pick = match exact {
            Some(i) => Some(i),
            None => {
                let mut best: Option<(usize, f64)> = None;
                for (i, a) in added.iter().enumerate().filter(|(i, _)| !used[*i]) {
                    let score = line_overlap(&old_text, &text(store, a.new_blob)?);
                    if score >= RENAME_SIMILARITY && best.is_none_or(|(_, s)| score > s) {
                        best = Some((i, score));
                    }
                }
                best.map(|(i, _)| i)
            }
        };
        match pick {
            Some(i) => {
                used[i] = true;
                let a = &added[i];
                let new_text = text(store, a.new_blob)?;
                out.push(Change {
                    old_path: Some(d.path.clone()),
                    new_path: Some(a.path.clone()),
                    old_blob: d.old_blob,
                    new_blob: a.new_blob,
                    hunks: hunks(&old_text, &new_text),
                    new_text,
                    old_text,
                });
            }
            None => out.push(Change {
                old_path: Some(d.path),
                new_path: None,
                old_blob: d.old_blob,
                new_blob: None,
                hunks: Vec::new(),
                new_text: String::new(),
                old_text,
            }),
        }
    }
    for (i, a) in added.into_iter().enumerate() {
        if !used[i] {
            let new_text = text(store, a.new_blob)?;
            out.push(Change {
                old_path: None,
                new_path: Some(a.path),
                old_blob: None,
                new_blob: a.new_blob,
                hunks: Vec::new(),
                new_text,
                old_text: String::new(),
            });
        }
    }
    Ok(out)
}

/// Where an anchored line range is after a change, or `None` when its lines were rewritten or
/// deleted. `start..=end` are 1-based; hunks are 0-based.
pub fn follow_lines(start: u32, end: u32, hunks: &[(Range<u32>, Range<u32>)]) -> Option<(u32, u32)> {
    let (s0, e0) = (start - 1, end - 1);
    let mut shift: i64 = 0;
    for (before, after) in hunks {
        if before.is_empty() {
            // A pure insertion before line `before.start`.
            if before.start <= s0 {
                shift += i64::from(after.end - after.start);
            } else if before.start <= e0 {
                return None;
            }
            continue;
        }
        if before.end <= s0 {
            shift += i64::from(after.end - after.start) - i64::from(before.end - before.start);
        } else if before.start <= e0 {
            return None;
        }
    }
    let s = i64::from(start) + shift;
    let e = i64::from(end) + shift;
    (s >= 1).then_some((s as u32, e as u32))
}

/// Where an anchored line range is after a change that rewrote some of its lines: each end
/// inside a rewritten hunk goes to that hunk's edge after the change, so the range spans the lines
/// that replaced the old ones. `start..=end` are 1-based; hunks are 0-based.
pub fn widen_lines(start: u32, end: u32, hunks: &[(Range<u32>, Range<u32>)]) -> (u32, u32) {
    // A 0-based line before the change, as a position after it: `first` for the start of a
    // range (the first line of the hunk that replaced it), the last line otherwise.
    let map = |line: u32, first: bool| -> u32 {
        let mut shift: i64 = 0;
        for (before, after) in hunks {
            let grown = i64::from(after.end - after.start) - i64::from(before.end - before.start);
            if before.is_empty() {
                // A pure insertion before line `before.start`.
                if before.start > line {
                    break;
                }
                shift += grown;
            } else if before.end <= line {
                shift += grown;
            } else if before.start <= line {
                return if first || after.is_empty() { after.start } else { after.end - 1 };
            } else {
                break;
            }
        }
        (i64::from(line) + shift).max(0) as u32
    };
    let s = map(start - 1, true);
    let e = map(end - 1, false).max(s);
    (s + 1, e + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_lines_move_with_edits_above_and_break_when_touched() {
        let old = "a\nb\nc\nd\ne\nf\n";
        // Two lines inserted above the anchor (c..d = 3-4): it moves down by two.
        let new = "x\ny\na\nb\nc\nd\ne\nf\n";
        assert_eq!(follow_lines(3, 4, &hunks(old, new)), Some((5, 6)));
        // A line removed above: up by one.
        assert_eq!(follow_lines(3, 4, &hunks(old, "b\nc\nd\ne\nf\n")), Some((2, 3)));
        // An edit below: unchanged.
        assert_eq!(follow_lines(3, 4, &hunks(old, "a\nb\nc\nd\nE\nf\n")), Some((3, 4)));
        // An edit inside, a deletion inside, an insertion inside: broken.
        assert_eq!(follow_lines(3, 4, &hunks(old, "a\nb\nC\nd\ne\nf\n")), None);
        assert_eq!(follow_lines(3, 4, &hunks(old, "a\nb\nd\ne\nf\n")), None);
        assert_eq!(follow_lines(3, 4, &hunks(old, "a\nb\nc\nnew\nd\ne\nf\n")), None);
    }

    #[test]
    fn rewritten_anchors_widen_to_the_lines_that_replaced_them() {
        let old = "a\nb\nc\nd\ne\nf\n";
        // c rewritten as two lines, anchor c..d (3-4): now C1, C2, d (3-5).
        assert_eq!(widen_lines(3, 4, &hunks(old, "a\nb\nC1\nC2\nd\ne\nf\n")), (3, 5));
        // An insertion above and d rewritten: the range moves and ends at the new d.
        assert_eq!(widen_lines(3, 4, &hunks(old, "x\na\nb\nc\nD\ne\nf\n")), (4, 5));
        // Nothing touched: the same as following.
        assert_eq!(widen_lines(3, 4, &hunks(old, "x\na\nb\nc\nd\ne\nf\n")), (4, 5));
    }

    #[test]
    fn renames_are_recognised_by_shared_lines() {
        assert!(line_overlap("a\nb\nc\nd\n", "a\nb\nc\nX\n") >= RENAME_SIMILARITY);
        assert!(line_overlap("a\nb\nc\nd\n", "w\nx\ny\nd\n") < RENAME_SIMILARITY);
    }
}
