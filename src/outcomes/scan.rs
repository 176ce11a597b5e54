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
    /// The time of the commit being read: outcome records are dated by their evidence.
    pub(super) at: Timestamp,
    pub(super) opts: &'a ScanOptions,
    pub(super) state: ScanState,
    pub(super) found: Vec<Evidence>,
}

/// (target, signal, delta, commit, paths, the commit's time)
pub type Evidence = (RecordId, &'static str, Milli, ObjectId, Vec<String>, Timestamp);

impl<'a> Scan<'a> {
    fn emit(&mut self, target: RecordId, signal: &'static str, delta: Milli, commit: ObjectId, paths: Vec<String>) {
        let at = self.at;
        self.found.push((target, signal, delta, commit, paths, at));
    }

    /// The records that could have influenced commit `c`: valid, written no later than it.
    fn live(&self, c: &CodeCommit) -> Vec<(RecordId, &'a Record)> {
        self.watched.iter().filter(|(_, r)| r.created_at <= c.time).copied().collect()
    }

    pub(super) fn commit(&mut self, c: &CodeCommit) -> Result<()> {
        let store = self.store;
        self.at = c.time;
        let parent = c.parents.first().copied();
        let parent_tree = match parent {
            Some(p) => Some(store.tree_of(p)?),
            None => None,
        };
        let changes = diff::changes(store, parent_tree, c.tree)?;
        let live = self.live(c);
        self.anchors(c, parent, &changes, &live)?;
        self.suggestions(c, &changes, &live);
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
        for (id, record) in live {
            let anchors = match &record.payload {
                Payload::Fact(f) => f.anchors.as_slice(),
                _ => &[],
            };
            for (i, a) in anchors.iter().enumerate() {
                let key = format!("{}#{i}", id.to_hex());
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
                                    self.emit(*id, "anchor-changed", ANCHOR_CHANGED, c.id, vec![a.path.clone()]);
                                }
                            }
                        }
                    }
                }
                self.state.anchors.insert(key, pos);
            }
        }
        let live_ids: HashSet<String> = live.iter().map(|(id, _)| id.to_hex()).collect();
        let mut broken = Vec::new();
        for (key, pos) in self.state.anchors.iter_mut().filter(|(_, p)| !p.dead) {
            let Some(change) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(pos.path.as_str())) else {
                continue;
            };
            let record = key.split('#').next().unwrap_or("").to_string();
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
                        broken.push((record, old_path));
                    }
                }
            }
        }
        for (record, path) in broken {
            if let Some(id) = RecordId::from_hex(&record) {
                self.emit(id, "anchor-changed", ANCHOR_CHANGED, c.id, vec![path]);
            }
        }
        Ok(())
    }

    fn suggestions(&mut self, c: &CodeCommit, changes: &[diff::Change], live: &[(RecordId, &Record)]) {
        for (id, record) in live {
            let suggestion = match &record.payload {
                Payload::Fact(f) => f.suggestion.as_deref(),
                Payload::Attempt(a) => a.suggestion.as_deref(),
                _ => None,
            };
            let Some(s) = suggestion else { continue };
            let wanted = tokens(s);
            if wanted.len() < MIN_SUGGESTION_TOKENS {
                continue;
            }
            let hex = id.to_hex();
            if let Some(path) = self.state.accepted.get(&hex).cloned() {
                // Accepted before: was it removed again?
                let Some(ch) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(path.as_str())) else {
                    continue;
                };
                let share = token_share(&wanted, &tokens(&ch.new_text));
                match &ch.new_path {
                    Some(p) if share >= PARTIAL_SHARE => {
                        self.state.accepted.insert(hex, p.clone());
                    }
                    _ => {
                        self.state.accepted.remove(&hex);
                        self.state.done.insert(format!("{hex}:regression"));
                        self.emit(*id, "regression", REGRESSION, c.id, vec![path]);
                    }
                }
                continue;
            }
            if self.state.done.contains(&format!("{hex}:regression")) {
                continue;
            }
            let best = changes
                .iter()
                .filter_map(|ch| {
                    let added = ch.added_lines().join("\n");
                    ch.new_path.as_ref().map(|p| (p.clone(), token_share(&wanted, &tokens(&added))))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            match best {
                Some((path, share)) if share >= ACCEPT_SHARE => {
                    self.state.accepted.insert(hex, path.clone());
                    self.emit(*id, "accepted", SUGGESTION_ACCEPTED, c.id, vec![path]);
                }
                Some((path, share)) if share >= PARTIAL_SHARE && self.state.done.insert(format!("{hex}:modified")) => {
                    self.emit(*id, "modified", SUGGESTION_MODIFIED, c.id, vec![path]);
                }
                _ => {}
            }
        }
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
                for id in ids {
                    self.emit(id, "regression", REGRESSION, c.id, paths.clone());
                }
                continue;
            }
            p.survived += 1;
            if p.survived >= self.opts.survive_commits {
                let paths: Vec<String> = p.before.iter().map(|(path, _)| path.clone()).collect();
                for id in ids {
                    self.emit(id, "accepted", TRAILER_ACCEPTED, c.id, paths.clone());
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
                1 => self.emit(*id, "health-improved", HEALTH, c.id, measured.clone()),
                -1 => self.emit(*id, "health-regressed", Milli(-HEALTH.0), c.id, measured.clone()),
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
