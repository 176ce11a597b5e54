//! The walk over one commit for [`super::detect`]: which watched records a commit's diff, trailers
//! and reverts are evidence about, and the tracking state (anchor positions, accepted suggestions,
//! trailer-linked commits waiting to survive) carried from one commit to the next.

use super::*;

/// The record ids a commit message's `Neo-Record:` trailers name (prefixes are resolved against
/// `known`; unknown or ambiguous ones are skipped).
fn trailer_ids(message: &str, known: &dyn Fn(&str) -> Vec<RecordId>) -> Vec<RecordId> {
    let mut out = Vec::new();
    for line in message.lines() {
        let Some(v) = line.trim().strip_prefix("Neo-Record:") else { continue };
        for p in v.split([',', ' ']).map(str::trim).filter(|p| p.len() >= 4) {
            if let [one] = known(p).as_slice() {
                if !out.contains(one) {
                    out.push(*one);
                }
            }
        }
    }
    out
}

fn short(hex: &str) -> &str {
    &hex[..hex.len().min(12)]
}

/// A path and why evidence names it.
type PathWhy = (String, String);

pub(super) fn day(t: Timestamp) -> i64 {
    t.0.div_euclid(86_400)
}

/// The commit a `git revert` message names.
fn reverted_commit(message: &str) -> Option<&str> {
    let i = message.find("This reverts commit ")?;
    let rest = &message[i + "This reverts commit ".len()..];
    let sha: &str = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    (sha.len() >= 7).then_some(sha)
}

pub(super) struct Scan<'a> {
    pub(super) store: &'a Store,
    pub(super) memory_state: &'a State,
    /// The valid facts and attempts that anchors or suggestions make scannable, found once per
    /// scan rather than once per commit (trailers name their records themselves).
    pub(super) watched: Vec<(RecordId, &'a Record)>,
    /// From which commit each watched record can be evidence about.
    pub(super) from: HashMap<RecordId, From>,
    /// The time of the commit being read: outcome records are dated by their evidence.
    pub(super) at: Timestamp,
    pub(super) opts: &'a ScanOptions,
    pub(super) state: ScanState,
    pub(super) found: Vec<Evidence>,
    /// How common suggestion tokens are, counted when a commit first needs it.
    pub(super) rarity: Option<suggest::Rarity>,
}

/// One piece of evidence about a record, found in one commit.
#[derive(Clone, Debug)]
pub struct Evidence {
    pub target: RecordId,
    pub signal: &'static str,
    pub delta: Milli,
    pub commit: ObjectId,
    pub paths: Vec<String>,
    /// The commit's time: outcome records are dated by their evidence.
    pub at: Timestamp,
    /// Why the commit is this evidence (the outcome record's body; empty when the signal says it).
    pub why: String,
    /// For anchor evidence about a confirmation's anchors: that confirmation's short id (part of
    /// the idempotency key, so the fold knows which anchors an outcome was about).
    pub generation: Option<String>,
}

/// A record's suggested code, if it has any.
fn suggestion_of(record: &Record) -> Option<&str> {
    match &record.payload {
        Payload::Fact(f) => f.suggestion.as_deref(),
        Payload::Attempt(a) => a.suggestion.as_deref(),
        _ => None,
    }
}

impl<'a> Scan<'a> {
    fn emit(
        &mut self,
        target: RecordId,
        signal: &'static str,
        delta: Milli,
        commit: ObjectId,
        paths: Vec<String>,
        why: String,
    ) {
        let at = self.at;
        self.found.push(Evidence { target, signal, delta, commit, paths, at, why, generation: None });
    }

    /// The records that could have influenced the commit at `index` of the scanned chain: valid,
    /// and anchored before it (or, without an anchor commit on this branch, written no later).
    fn live(&self, c: &CodeCommit, index: usize) -> Vec<(RecordId, &'a Record)> {
        self.watched
            .iter()
            .filter(|(id, r)| match self.from.get(id) {
                Some(From::After(i)) => index > *i,
                Some(From::Before) => true,
                Some(From::Time(t)) => *t <= c.time,
                None => r.created_at <= c.time,
            })
            .copied()
            .collect()
    }

    pub(super) fn commit(&mut self, c: &CodeCommit, index: usize) -> Result<()> {
        let store = self.store;
        self.at = c.time;
        let parent = c.parents.first().copied();
        let parent_tree = match parent {
            Some(p) => Some(store.tree_of(p)?),
            None => None,
        };
        let changes = diff::changes(store, parent_tree, c.tree)?;
        let live = self.live(c, index);
        self.anchors(c, parent, &changes, &live)?;
        self.suggestions(c, parent, &changes, &live)?;
        self.trailers(c, parent, &changes)?;
        Ok(())
    }

    fn anchors(
        &mut self,
        c: &CodeCommit,
        parent: Option<ObjectId>,
        changes: &[diff::Change],
        live: &[(RecordId, &Record)],
    ) -> Result<()> {
        let store = self.store;
        // Start following anchors of records seen for the first time, catching up from the
        // anchor's own commit to this commit's parent when they differ.
        for (id, _) in live {
            let Some(entry) = self.memory_state.entries.get(id) else { continue };
            // A confirmation's anchors are tracked afresh, from the commit it was made at.
            let tag = entry.confirmed.as_ref().map(|c| format!("{}.", c.by.short())).unwrap_or_default();
            for (i, a) in entry.anchors().iter().enumerate() {
                let key = format!("{}#{tag}{i}", id.to_hex());
                if self.state.anchors.contains_key(&key) {
                    continue;
                }
                let mut pos = AnchorPos { path: a.path.clone(), lines: a.lines.map(|l| (l.start, l.end)), dead: false };
                let from = a.commit.as_deref().and_then(|h| ObjectId::from_hex(h.as_bytes()).ok());
                if let (Some(from), Some(parent)) = (from, parent) {
                    if from != parent && store.has_commit(from)? {
                        let (old, new) = (store.blob_at(from, &a.path)?, store.blob_at(parent, &a.path)?);
                        if old != new {
                            let moved = match (new, pos.lines) {
                                (None, _) => None,
                                (Some(_), None) => pos.lines,
                                (Some(_), Some((s, e))) => {
                                    let text = |b: Option<ObjectId>| -> Result<String> {
                                        Ok(match b {
                                            Some(b) => String::from_utf8(store.read_blob(b)?).unwrap_or_default(),
                                            None => String::new(),
                                        })
                                    };
                                    diff::follow_lines(s, e, &diff::hunks(&text(old)?, &text(new)?))
                                }
                            };
                            match (new, moved) {
                                (Some(_), Some(l)) => pos.lines = Some(l),
                                (Some(_), None) if pos.lines.is_none() => {}
                                _ => {
                                    pos.dead = true;
                                    let why = match (new, pos.lines) {
                                        (None, _) => format!("{} was deleted", a.path),
                                        (_, Some((s, e))) => format!("lines {s}-{e} of {} were rewritten", a.path),
                                        (_, None) => format!("{} changed", a.path),
                                    };
                                    self.emit(*id, "anchor-changed", ANCHOR_CHANGED, c.id, vec![a.path.clone()], why);
                                    self.set_generation(entry.confirmed.as_ref().map(|c| c.by.short()));
                                }
                            }
                        }
                    }
                }
                self.state.anchors.insert(key, pos);
            }
        }
        let live_ids: HashSet<String> = live.iter().map(|(id, _)| id.to_hex()).collect();
        // Per record, the anchors this commit broke: one event each, however many anchors.
        let mut broken: BTreeMap<(String, Option<String>), Vec<PathWhy>> = BTreeMap::new();
        for (key, pos) in self.state.anchors.iter_mut().filter(|(_, p)| !p.dead) {
            let Some(change) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(pos.path.as_str())) else {
                continue;
            };
            let record = key.split('#').next().unwrap_or("").to_string();
            // `<record>#<confirmation>.<i>` for a confirmation's anchors, `<record>#<i>` otherwise.
            let generation = key.split('#').nth(1).and_then(|t| t.split_once('.')).map(|(g, _)| g.to_string());
            let old_path = pos.path.clone();
            let followed = match (&change.new_path, pos.lines) {
                (None, _) => None,
                (Some(p), None) => Some((p.clone(), None)),
                (Some(p), Some((s, e))) => diff::follow_lines(s, e, &change.hunks).map(|l| (p.clone(), Some(l))),
            };
            match followed {
                Some((path, lines)) => {
                    pos.path = path;
                    pos.lines = lines;
                }
                None => {
                    pos.dead = true;
                    if live_ids.contains(&record) {
                        // Named by the path the file has now (a rename in the same commit).
                        let (path, why) = match (&change.new_path, pos.lines) {
                            (None, _) => (old_path.clone(), format!("{old_path} was deleted")),
                            (Some(p), Some((s, e))) if *p != old_path => {
                                (p.clone(), format!("lines {s}-{e} of {old_path} were rewritten as it became {p}"))
                            }
                            (Some(p), Some((s, e))) => (p.clone(), format!("lines {s}-{e} of {p} were rewritten")),
                            (Some(p), None) => (p.clone(), format!("{p} changed")),
                        };
                        broken.entry((record, generation)).or_default().push((path, why));
                    }
                }
            }
        }
        for ((record, generation), anchors) in broken {
            if let Some(id) = RecordId::from_hex(&record) {
                let (mut paths, whys): (Vec<String>, Vec<String>) = anchors.into_iter().unzip();
                paths.dedup();
                self.emit(id, "anchor-changed", ANCHOR_CHANGED, c.id, paths, whys.join("; "));
                self.set_generation(generation);
            }
        }
        Ok(())
    }

    /// Mark the evidence just emitted as about a confirmation's anchors.
    fn set_generation(&mut self, generation: Option<String>) {
        if let Some(last) = self.found.last_mut() {
            last.generation = generation;
        }
    }

    /// How common each suggestion token is, counted once per scan at the tree before the first
    /// commit that could adopt one (see [`suggest`]).
    fn rarity(&mut self, c: &CodeCommit, parent: Option<ObjectId>) -> Result<&suggest::Rarity> {
        if self.rarity.is_none() {
            let wanted: HashSet<String> =
                self.watched.iter().filter_map(|(_, r)| suggestion_of(r)).flat_map(tokens).collect();
            let tree = match parent {
                Some(p) => self.store.tree_of(p)?,
                None => c.tree,
            };
            self.rarity = Some(suggest::Rarity::of_tree(self.store, tree, &wanted)?);
        }
        Ok(self.rarity.as_ref().expect("set above"))
    }

    fn suggestions(
        &mut self,
        c: &CodeCommit,
        parent: Option<ObjectId>,
        changes: &[diff::Change],
        live: &[(RecordId, &Record)],
    ) -> Result<()> {
        let mut removed: Option<HashSet<&str>> = None;
        // The tokens every change adds, read once per commit (not once per record), and only
        // when some live record has a suggestion.
        let mut added: Option<HashSet<String>> = None;
        for (id, record) in live {
            let Some(s) = suggestion_of(record) else { continue };
            let all = tokens(s);
            if all.len() < MIN_SUGGESTION_TOKENS {
                continue;
            }
            let hex = id.to_hex();
            let accepted_in = self.state.accepted.get(&hex).cloned();
            if accepted_in.is_none() {
                // Most commits add none of a snippet's names: the rarity count is not needed then.
                let added = added.get_or_insert_with(|| {
                    changes.iter().flat_map(|ch| tokens(&ch.added_lines().join("\n"))).collect()
                });
                let named = all.iter().any(|t| suggest::name_like(t) && added.contains(t));
                if !named || self.state.done.contains(&format!("{hex}:regression")) {
                    continue;
                }
            }
            let marks = suggest::distinctive(s, self.rarity(c, parent)?);
            if marks.is_empty() {
                continue;
            }
            let total: f64 = marks.iter().map(|(_, w)| w).sum();
            if let Some(path) = accepted_in {
                // Accepted before: were its distinctive names removed again?
                let Some(ch) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(path.as_str())) else {
                    continue;
                };
                let have: HashSet<String> = tokens(&ch.new_text).into_iter().collect();
                let left = marks.iter().filter(|(m, _)| have.contains(m)).map(|(_, w)| w).sum::<f64>() / total;
                match &ch.new_path {
                    Some(p) if left >= PARTIAL_SHARE => {
                        self.state.accepted.insert(hex, p.clone());
                    }
                    _ => {
                        self.state.accepted.remove(&hex);
                        self.state.done.insert(format!("{hex}:regression"));
                        let why =
                            format!("the suggestion's distinctive names left {path} ({:.0}% remain)", left * 100.0);
                        self.emit(*id, "regression", REGRESSION, c.id, vec![path], why);
                    }
                }
                continue;
            }
            let related = self.related_paths(*id, record);
            let removed = removed.get_or_insert_with(|| suggest::removed_lines(changes));
            let rarity = self.rarity.as_ref().expect("counted above");
            let best = changes
                .iter()
                .filter(|ch| {
                    related.is_empty()
                        || ch.new_path.as_ref().is_some_and(|p| related.contains(p))
                        || suggest::defines(&ch.old_text, &marks)
                })
                .filter_map(|ch| suggest::in_change(ch, &all, &marks, rarity, removed))
                .filter(|f| !f.moved)
                .max_by(|a, b| a.share.total_cmp(&b.share).then(b.path.cmp(&a.path)));
            match best {
                Some(f) if f.share >= ACCEPT_SHARE => {
                    self.state.accepted.insert(hex, f.path.clone());
                    self.emit(*id, "accepted", SUGGESTION_ACCEPTED, c.id, vec![f.path], f.why);
                }
                Some(f) if f.share >= PARTIAL_SHARE && self.state.done.insert(format!("{hex}:modified")) => {
                    self.emit(*id, "modified", SUGGESTION_MODIFIED, c.id, vec![f.path], f.why);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The files a record is about: its anchors (where they were written and where they are
    /// now) or an attempt's affected files.
    fn related_paths(&self, id: RecordId, record: &Record) -> HashSet<String> {
        let mut out: HashSet<String> = match &record.payload {
            Payload::Fact(_) => self
                .memory_state
                .entries
                .get(&id)
                .map(|e| e.anchors().iter().map(|a| a.path.clone()).collect())
                .unwrap_or_default(),
            Payload::Attempt(a) => a.files.iter().map(|f| f.path.clone()).collect(),
            _ => HashSet::new(),
        };
        let prefix = format!("{}#", id.to_hex());
        out.extend(
            self.state
                .anchors
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(_, p)| p.path.clone()),
        );
        out
    }

    /// Files of `lang` in an import cycle in `tree` (at most [`MAX_GRAPH_FILES`] files are read).
    fn cycles(&self, tree: Option<ObjectId>, lang: health::Lang) -> Result<usize> {
        let Some(tree) = tree else { return Ok(0) };
        let store = self.store;
        let files: Vec<(String, ObjectId)> = store
            .diff_files(None, Some(tree))?
            .into_iter()
            .filter(|f| health::Lang::of(&f.path) == Some(lang))
            .filter_map(|f| f.new_blob.map(|b| (f.path, b)))
            .take(MAX_GRAPH_FILES)
            .collect();
        let names: HashSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        let exists = |p: &str| names.contains(p);
        let mut graph = BTreeMap::new();
        for (path, blob) in &files {
            let text = String::from_utf8(store.read_blob(*blob)?).unwrap_or_default();
            graph.insert(path.clone(), health::imports(lang, path, &text, &exists));
        }
        Ok(health::files_in_cycles(&graph))
    }

    fn trailers(&mut self, c: &CodeCommit, parent: Option<ObjectId>, changes: &[diff::Change]) -> Result<()> {
        let store = self.store;
        // Earlier linked commits: reverted by this one, or one more commit survived.
        let touched: HashSet<&str> =
            changes.iter().flat_map(|ch| ch.old_path.iter().chain(ch.new_path.iter())).map(String::as_str).collect();
        let mut still = Vec::new();
        for mut p in std::mem::take(&mut self.state.pending) {
            let explicit = reverted_commit(&c.message).is_some_and(|sha| p.commit.starts_with(sha));
            let restored = p.before.iter().any(|(path, _)| touched.contains(path.as_str())) && {
                let mut all = true;
                for (path, blob) in &p.before {
                    let now = store.blob_at(c.id, path)?.map(|b| b.to_string());
                    if now != *blob {
                        all = false;
                        break;
                    }
                }
                all
            };
            let ids: Vec<RecordId> = p.records.iter().filter_map(|r| RecordId::from_hex(r)).collect();
            if explicit || restored {
                let paths: Vec<String> = p.before.iter().map(|(path, _)| path.clone()).collect();
                let why = if explicit {
                    format!("reverts {}", short(&p.commit))
                } else {
                    format!("restores every file {} changed", short(&p.commit))
                };
                for id in ids {
                    self.emit(id, "regression", REGRESSION, c.id, paths.clone(), why.clone());
                }
                continue;
            }
            p.survived += 1;
            if p.survived >= self.opts.survive_commits {
                let paths: Vec<String> = p.before.iter().map(|(path, _)| path.clone()).collect();
                let why = format!("{} survived {} later commits", short(&p.commit), p.survived);
                for id in ids {
                    self.emit(id, "accepted", TRAILER_ACCEPTED, c.id, paths.clone(), why.clone());
                }
                continue;
            }
            still.push(p);
        }
        self.state.pending = still;

        // This commit applies records: remember it, and compare code health before and after.
        let state = self.memory_state;
        let ids = trailer_ids(&c.message, &|p| state.ids_with_prefix(p));
        if ids.is_empty() {
            return Ok(());
        }
        let mut before = Vec::new();
        let mut verdict = 0;
        let mut measured = Vec::new();
        for ch in changes {
            for path in ch.old_path.iter().chain(ch.new_path.iter()) {
                if !before.iter().any(|(p, _): &(String, Option<String>)| p == path) {
                    let blob = match parent {
                        Some(parent) => store.blob_at(parent, path)?.map(|b| b.to_string()),
                        None => None,
                    };
                    before.push((path.clone(), blob));
                }
            }
            if let (Some(path), Some(_)) = (&ch.new_path, &ch.old_path) {
                if let Some(lang) = health::Lang::of(path) {
                    let v = health::verdict(health::measure(lang, &ch.old_text), health::measure(lang, &ch.new_text));
                    if v != 0 {
                        verdict += v;
                        measured.push(path.clone());
                    }
                }
            }
        }
        // Import cycles, per language the commit touched: more files in cycles is worse.
        let mut langs: Vec<health::Lang> =
            changes.iter().filter_map(|ch| ch.new_path.as_deref().and_then(health::Lang::of)).collect();
        langs.dedup();
        let parent_tree = match parent {
            Some(p) => Some(store.tree_of(p)?),
            None => None,
        };
        for lang in langs.into_iter().collect::<BTreeSet<_>>() {
            let (before_n, after_n) = (self.cycles(parent_tree, lang)?, self.cycles(Some(c.tree), lang)?);
            if before_n != after_n {
                verdict += if after_n > before_n { -1 } else { 1 };
                for path in changes.iter().filter_map(|ch| ch.new_path.as_ref()) {
                    if health::Lang::of(path) == Some(lang) && !measured.contains(path) {
                        measured.push(path.clone());
                    }
                }
            }
        }
        for id in &ids {
            match verdict.signum() {
                1 => self.emit(*id, "health-improved", HEALTH, c.id, measured.clone(), String::new()),
                -1 => self.emit(*id, "health-regressed", Milli(-HEALTH.0), c.id, measured.clone(), String::new()),
                _ => {}
            }
        }
        self.state.pending.push(Pending {
            commit: c.id.to_string(),
            records: ids.iter().map(|i| i.to_hex()).collect(),
            survived: 0,
            before,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_and_revert_messages() {
        let id = RecordId([7; 32]);
        let known = |p: &str| if id.to_hex().starts_with(p) { vec![id] } else { vec![] };
        assert_eq!(trailer_ids("fix\n\nNeo-Record: 0707070707\nNeo-Record: ffff\n", &known), vec![id]);
        assert_eq!(
            reverted_commit("Revert \"x\"\n\nThis reverts commit 0123456789abcdef.\n"),
            Some("0123456789abcdef")
        );
        assert_eq!(reverted_commit("nothing"), None);
    }
}
