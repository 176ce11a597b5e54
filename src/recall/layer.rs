//! The layers of a recall, listed once: what each is called, where it is shown, how much of the
//! budget it may take, how its size is estimated, and whether its items were chosen for their
//! relevance to the query.
//!
//! Everything that walks a recall layer by layer (the budget, the token estimate, the markdown,
//! telemetry, the scope and passage annotations) iterates [`LayerKind::ALL`], so a layer added
//! here is budgeted, rendered and counted everywhere; the compiler names every `match` that must
//! say what the new layer is.

use super::{DocumentSection, Item, Recall};
use crate::construct::Hit;

/// One layer of a recall, in the order it is budgeted and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LayerKind {
    /// Every valid constraint (they always apply), the matching ones first.
    Constraints,
    /// Relevant current facts, copies folded.
    Facts,
    /// The best matching attempt of each task.
    Attempts,
    /// Matching facts that are no longer true, with what replaced them.
    Invalidated,
    /// Matching known unknowns.
    KnownUnknowns,
    /// Sections of the project's ingested documents.
    Documents,
    /// Curated patterns from the Construct.
    Construct,
}

/// How much of the token budget a layer may fill, counting what the layers before it used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// The whole budget.
    All,
    /// At most this fraction of it (numerator, denominator).
    Part(usize, usize),
}

impl Share {
    /// The ceiling this share puts on the tokens used so far, for a budget of `budget`.
    pub fn of(self, budget: usize) -> usize {
        match self {
            Share::All => budget,
            Share::Part(n, d) => budget * n / d,
        }
    }
}

impl LayerKind {
    /// Every layer, in the order it is budgeted and shown.
    pub const ALL: [LayerKind; 7] = [
        LayerKind::Constraints,
        LayerKind::Facts,
        LayerKind::Attempts,
        LayerKind::Invalidated,
        LayerKind::KnownUnknowns,
        LayerKind::Documents,
        LayerKind::Construct,
    ];

    /// Its name: the key of its list in recall's JSON, and the layer telemetry records.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Constraints => "constraints",
            LayerKind::Facts => "facts",
            LayerKind::Attempts => "attempts",
            LayerKind::Invalidated => "invalidated",
            LayerKind::KnownUnknowns => "known_unknowns",
            LayerKind::Documents => "documents",
            LayerKind::Construct => "construct",
        }
    }

    /// The layer named `name`, if any.
    pub fn from_name(name: &str) -> Option<LayerKind> {
        LayerKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Its heading in the markdown.
    pub fn heading(self) -> &'static str {
        match self {
            LayerKind::Constraints => "Constraints (always apply)",
            LayerKind::Facts => "Relevant facts",
            LayerKind::Attempts => "Earlier attempts (best match per task)",
            LayerKind::Invalidated => "No longer true",
            LayerKind::KnownUnknowns => "Known unknowns",
            LayerKind::Documents => "From the project's documents",
            LayerKind::Construct => "From the Construct (curated patterns)",
        }
    }

    /// How much of the budget it may fill: constraints at most two thirds, so that a memory of
    /// many constraints still leaves room for what the query is about.
    pub fn share(self) -> Share {
        match self {
            LayerKind::Constraints => Share::Part(2, 3),
            _ => Share::All,
        }
    }

    /// Whether its items were chosen for their relevance to the query: what counts as retrieved
    /// in stats, implicit feedback and curation. Constraints are shown always, invalidated facts
    /// as history, and documents and patterns are not records of this memory.
    pub fn relevant(self) -> bool {
        matches!(self, LayerKind::Facts | LayerKind::Attempts | LayerKind::KnownUnknowns)
    }

    /// Whether its items are records of the memory (not documents' sections or patterns).
    pub fn from_memory(self) -> bool {
        !matches!(self, LayerKind::Documents | LayerKind::Construct)
    }
}

/// Estimated tokens of `chars` characters as rendered: characters / 4. The one estimate recall's
/// budget, its `tokens` figure and telemetry use.
pub fn estimate(chars: usize) -> usize {
    chars / 4
}

/// Characters of markup around one record as rendered (list marker, id, confidence, scope).
pub const RECORD_MARKUP: usize = 60;
/// Characters of markup around a replacement's reason, a document section or a pattern.
pub const LINE_MARKUP: usize = 40;

/// Something a layer shows: its size as rendered, in characters.
pub trait Shown {
    fn chars(&self) -> usize;
}

impl Shown for Item {
    fn chars(&self) -> usize {
        self.subject.len()
            + self.body.len()
            + RECORD_MARKUP
            + self.replaced_by.iter().map(|r| r.reason.len() + LINE_MARKUP).sum::<usize>()
    }
}

impl Shown for DocumentSection {
    fn chars(&self) -> usize {
        self.path.len() + self.heading.len() + self.excerpt.len() + LINE_MARKUP
    }
}

impl Shown for Hit {
    fn chars(&self) -> usize {
        self.title.len() + self.intent.len() + LINE_MARKUP
    }
}

/// The tokens a recall may use, what it used and how many items it cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub limit: usize,
    pub used: usize,
    pub cut: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget { limit, used: 0, cut: 0 }
    }

    /// Take an item of `chars` characters into `layer` if it fits that layer's share; count it
    /// as cut if not.
    pub fn admit(&mut self, layer: LayerKind, chars: usize) -> bool {
        let t = estimate(chars);
        if self.used + t <= layer.share().of(self.limit) {
            self.used += t;
            true
        } else {
            self.cut += 1;
            false
        }
    }

    /// The items of `layer` that fit, in order (an item that does not fit is cut, and a smaller
    /// one after it may still fit).
    pub fn fit<T: Shown>(&mut self, layer: LayerKind, items: Vec<T>) -> Vec<T> {
        items.into_iter().filter(|i| self.admit(layer, i.chars())).collect()
    }
}

/// One shown entry of a layer, as telemetry and annotations see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub layer: LayerKind,
    /// A record's full hex id, or a pattern's name.
    pub id: String,
    /// Where it came from: a memory's scope, `project` for a document, `construct` for a pattern.
    pub scope: String,
}

impl Recall {
    /// The records a layer of the memory holds (`None` for documents and patterns).
    pub fn items(&self, layer: LayerKind) -> Option<&[Item]> {
        Some(match layer {
            LayerKind::Constraints => &self.constraints,
            LayerKind::Facts => &self.facts,
            LayerKind::Attempts => &self.attempts,
            LayerKind::Invalidated => &self.invalidated,
            LayerKind::KnownUnknowns => &self.known_unknowns,
            LayerKind::Documents | LayerKind::Construct => return None,
        })
    }

    /// [`Recall::items`], mutably.
    pub fn items_mut(&mut self, layer: LayerKind) -> Option<&mut Vec<Item>> {
        Some(match layer {
            LayerKind::Constraints => &mut self.constraints,
            LayerKind::Facts => &mut self.facts,
            LayerKind::Attempts => &mut self.attempts,
            LayerKind::Invalidated => &mut self.invalidated,
            LayerKind::KnownUnknowns => &mut self.known_unknowns,
            LayerKind::Documents | LayerKind::Construct => return None,
        })
    }

    /// Every shown entry of every layer, in the order shown.
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for layer in LayerKind::ALL {
            match layer {
                LayerKind::Documents => out.extend(self.documents.iter().map(|d| Entry {
                    layer,
                    id: d.source.to_hex(),
                    scope: "project".into(),
                })),
                LayerKind::Construct => out.extend(self.construct.iter().map(|h| Entry {
                    layer,
                    id: h.name.clone(),
                    scope: "construct".into(),
                })),
                _ => out.extend(self.items(layer).unwrap_or_default().iter().map(|i| Entry {
                    layer,
                    id: i.id.to_hex(),
                    scope: i.scope.clone(),
                })),
            }
        }
        out
    }

    /// Whether no layer of the memory (documents and patterns aside) holds anything.
    pub fn memory_is_silent(&self) -> bool {
        LayerKind::ALL.into_iter().filter_map(|k| self.items(k)).all(<[Item]>::is_empty)
    }

    /// The budget as it stands.
    fn budget_now(&self) -> Budget {
        Budget { limit: self.budget, used: self.tokens, cut: self.cut }
    }

    fn keep(&mut self, b: Budget) {
        self.tokens = b.used;
        self.cut = b.cut;
    }

    /// Add the layer from the project's documents (before the Construct), within what is left
    /// of the budget.
    pub fn attach_documents(&mut self, hits: Vec<DocumentSection>) {
        let mut b = self.budget_now();
        let kept = b.fit(LayerKind::Documents, hits);
        self.documents.extend(kept);
        self.keep(b);
    }

    /// Add the Construct layer (after everything else), within what is left of the budget.
    pub fn attach_construct(&mut self, hits: Vec<Hit>) {
        let mut b = self.budget_now();
        let kept = b.fit(LayerKind::Construct, hits);
        self.construct.extend(kept);
        self.keep(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_has_a_distinct_name_that_finds_it() {
        let mut names: Vec<&str> = LayerKind::ALL.iter().map(|k| k.name()).collect();
        for k in LayerKind::ALL {
            assert_eq!(LayerKind::from_name(k.name()), Some(k));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LayerKind::ALL.len());
    }

    #[test]
    fn constraints_stop_at_their_share_and_the_rest_fill_the_budget() {
        let mut b = Budget::new(300);
        // 160 characters are 40 tokens: five constraints fit under 200, the sixth does not.
        let admitted = (0..6).filter(|_| b.admit(LayerKind::Constraints, 160)).count();
        assert_eq!((admitted, b.used, b.cut), (5, 200, 1));
        // Facts may use the whole budget: two more fit, the third is cut, a small one still fits.
        assert!(b.admit(LayerKind::Facts, 160) && b.admit(LayerKind::Facts, 160));
        assert!(!b.admit(LayerKind::Facts, 160));
        assert!(b.admit(LayerKind::Facts, 80));
        assert_eq!((b.used, b.cut), (300, 2));
    }
}
