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
use serde::Serialize;

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
pub trait Footprint {
    fn chars(&self) -> usize;
}

impl Footprint for Item {
    fn chars(&self) -> usize {
        self.subject.len()
            + self.body.len()
            + RECORD_MARKUP
            + self.replaced_by.iter().map(|r| r.reason.len() + LINE_MARKUP).sum::<usize>()
    }
}

impl Footprint for DocumentSection {
    fn chars(&self) -> usize {
        self.path.len() + self.heading.len() + self.excerpt.len() + LINE_MARKUP
    }
}

impl Footprint for Hit {
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

    /// Whether an item of `chars` characters would fit what is left of `layer`'s share (nothing
    /// taken, nothing counted).
    pub fn would_fit(&self, layer: LayerKind, chars: usize) -> bool {
        self.used + estimate(chars) <= layer.share().of(self.limit)
    }

    /// [`Budget::fit`] of `items` taken best first by `order` (a total order), without sorting
    /// them all: they are put in order a chunk at a time, and once not even the smallest would
    /// fit what is left, the rest are cut unsorted. What it takes, and how many it cuts, are
    /// what sorting them all and fitting them would give.
    pub fn fit_best_first<'i, T>(
        &mut self,
        layer: LayerKind,
        items: &'i mut [T],
        chars: impl Fn(&T) -> usize,
        order: impl Fn(&T, &T) -> std::cmp::Ordering,
    ) -> Vec<&'i T> {
        const CHUNK: usize = 64;
        let smallest = items.iter().map(&chars).min().unwrap_or(0);
        let mut taken = Vec::new();
        let mut from = 0;
        while from < items.len() {
            if !self.would_fit(layer, smallest) {
                self.cut += items.len() - from;
                break;
            }
            let end = (from + CHUNK).min(items.len());
            if end < items.len() {
                items[from..].select_nth_unstable_by(end - from - 1, &order);
            }
            items[from..end].sort_by(&order);
            taken.extend((from..end).filter(|&i| self.admit(layer, chars(&items[i]))));
            from = end;
        }
        let items: &'i [T] = items;
        taken.into_iter().map(|i| &items[i]).collect()
    }

    /// [`Budget::fit`] of `items`, `total` of them, already in order: once not even the
    /// `smallest` would fit what is left, the rest are cut without being drawn (what
    /// [`Budget::fit_best_first`] does with items it puts in order itself).
    pub fn fit_in_order<T>(
        &mut self,
        layer: LayerKind,
        items: impl Iterator<Item = T>,
        total: usize,
        smallest: usize,
        chars: impl Fn(&T) -> usize,
    ) -> Vec<T> {
        let mut taken = Vec::new();
        let mut drawn = 0;
        for item in items {
            if !self.would_fit(layer, smallest) {
                break;
            }
            drawn += 1;
            if self.admit(layer, chars(&item)) {
                taken.push(item);
            }
        }
        self.cut += total.saturating_sub(drawn);
        taken
    }

    /// The items of `layer` that fit, in order (an item that does not fit is cut, and a smaller
    /// one after it may still fit).
    pub fn fit<T: Footprint>(&mut self, layer: LayerKind, items: Vec<T>) -> Vec<T> {
        items.into_iter().filter(|i| self.admit(layer, i.chars())).collect()
    }
}

/// One shown entry of a layer, as telemetry and annotations see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerEntry {
    pub layer: LayerKind,
    /// A record's full hex id, or a pattern's name.
    pub id: String,
    /// Where it came from: a memory's scope, `project` for a document, `construct` for a pattern.
    pub scope: String,
}

/// What one layer shows: records of the memory, sections of the project's documents, or
/// patterns of the Construct (which of them is the layer's kind's to say: [`Layer::empty`]).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Layer {
    Records(Vec<Item>),
    Sections(Vec<DocumentSection>),
    Patterns(Vec<Hit>),
}

impl Layer {
    /// The empty layer of `kind`.
    pub fn empty(kind: LayerKind) -> Layer {
        match kind {
            LayerKind::Documents => Layer::Sections(Vec::new()),
            LayerKind::Construct => Layer::Patterns(Vec::new()),
            _ => Layer::Records(Vec::new()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Layer::Records(v) => v.len(),
            Layer::Sections(v) => v.len(),
            Layer::Patterns(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every layer of a recall, one per [`LayerKind`], in the order of [`LayerKind::ALL`].
#[derive(Clone, Debug)]
pub struct Layers([Layer; LayerKind::ALL.len()]);

impl Default for Layers {
    fn default() -> Layers {
        Layers(LayerKind::ALL.map(Layer::empty))
    }
}

impl Layers {
    pub fn get(&self, kind: LayerKind) -> &Layer {
        &self.0[kind as usize]
    }

    pub fn get_mut(&mut self, kind: LayerKind) -> &mut Layer {
        &mut self.0[kind as usize]
    }

    /// Set the layer of `kind` (what it shows must be of its kind's sort: records for the
    /// memory's layers).
    pub fn put(&mut self, kind: LayerKind, layer: Layer) {
        debug_assert_eq!(std::mem::discriminant(&layer), std::mem::discriminant(&Layer::empty(kind)));
        self.0[kind as usize] = layer;
    }
}

impl Recall {
    /// The records a layer shows (none for documents and patterns).
    pub fn items(&self, layer: LayerKind) -> &[Item] {
        match self.layers.get(layer) {
            Layer::Records(items) => items,
            _ => &[],
        }
    }

    /// [`Recall::items`], mutably (`None` for documents and patterns).
    pub fn items_mut(&mut self, layer: LayerKind) -> Option<&mut Vec<Item>> {
        match self.layers.get_mut(layer) {
            Layer::Records(items) => Some(items),
            _ => None,
        }
    }

    /// Every recalled record, layer by layer.
    pub fn all_items_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.layers.0.iter_mut().flat_map(|l| match l {
            Layer::Records(items) => items.as_mut_slice(),
            _ => &mut [],
        })
    }

    /// The sections of the project's documents shown.
    pub fn documents(&self) -> &[DocumentSection] {
        match self.layers.get(LayerKind::Documents) {
            Layer::Sections(s) => s,
            _ => &[],
        }
    }

    /// The Construct's patterns shown.
    pub fn patterns(&self) -> &[Hit] {
        match self.layers.get(LayerKind::Construct) {
            Layer::Patterns(p) => p,
            _ => &[],
        }
    }

    /// Every shown entry of every layer, in the order shown.
    pub fn entries(&self) -> Vec<LayerEntry> {
        let mut out = Vec::new();
        for layer in LayerKind::ALL {
            match self.layers.get(layer) {
                Layer::Sections(sections) => out.extend(sections.iter().map(|d| LayerEntry {
                    layer,
                    id: d.source.to_hex(),
                    scope: "project".into(),
                })),
                Layer::Patterns(patterns) => out.extend(patterns.iter().map(|h| LayerEntry {
                    layer,
                    id: h.name.clone(),
                    scope: "construct".into(),
                })),
                Layer::Records(items) => {
                    out.extend(items.iter().map(|i| LayerEntry { layer, id: i.id.to_hex(), scope: i.scope.clone() }))
                }
            }
        }
        out
    }

    /// Whether no layer of the memory (documents and patterns aside) holds anything.
    pub fn memory_is_silent(&self) -> bool {
        LayerKind::ALL.into_iter().all(|k| self.items(k).is_empty())
    }
}

/// Recall's JSON: the memory's layers by name after `semantic`, the documents' and the
/// Construct's after `scopes` (each only when it shows something), as the fields were before
/// the layers were kept by kind.
impl Serialize for Recall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Recall", 16)?;
        s.serialize_field("query", &self.query)?;
        s.serialize_field("semantic", &self.semantic)?;
        for kind in LayerKind::ALL.into_iter().filter(|k| k.from_memory()) {
            s.serialize_field(kind.name(), self.layers.get(kind))?;
        }
        s.serialize_field("familiarity", &self.familiarity)?;
        s.serialize_field("budget", &self.budget)?;
        s.serialize_field("tokens", &self.tokens)?;
        s.serialize_field("cut", &self.cut)?;
        s.serialize_field("scopes", &self.scopes)?;
        for kind in LayerKind::ALL.into_iter().filter(|k| !k.from_memory()) {
            match self.layers.get(kind) {
                l if l.is_empty() => s.skip_field(kind.name())?,
                l => s.serialize_field(kind.name(), l)?,
            }
        }
        match &self.expanded {
            Some(e) => s.serialize_field("expanded", e)?,
            None => s.skip_field("expanded")?,
        }
        match &self.stale {
            Some(st) => s.serialize_field("stale", st)?,
            None => s.skip_field("stale")?,
        }
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Taking the best first a chunk at a time takes what sorting them all and fitting them
    /// takes, cuts as many, and leaves the same budget, whatever the sizes and the budget.
    #[test]
    fn fitting_the_best_first_takes_what_sorting_them_all_takes() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for round in 0..200 {
            // (score, id, chars): ties in score broken by id, as constraints are.
            let n = next(500) as usize;
            let items: Vec<(u64, u64, usize)> =
                (0..n as u64).map(|id| (next(50), id, 20 + next(600) as usize)).collect();
            let order = |a: &(u64, u64, usize), b: &(u64, u64, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
            let limit = [50, 400, 2_000, 8_000, 100_000][round % 5];
            let mut sorted = items.clone();
            sorted.sort_by(order);
            let mut all = Budget::new(limit);
            let expected: Vec<u64> = all
                .fit(LayerKind::Constraints, sorted.iter().map(|i| Sized(i.2, i.1)).collect())
                .into_iter()
                .map(|s| s.1)
                .collect();
            let mut chunked = Budget::new(limit);
            let mut shuffled = items.clone();
            let taken: Vec<u64> = chunked
                .fit_best_first(LayerKind::Constraints, &mut shuffled, |i| i.2, order)
                .into_iter()
                .map(|i| i.1)
                .collect();
            assert_eq!(taken, expected, "round {round}: {n} items, budget {limit}");
            assert_eq!(chunked, all, "round {round}: the same tokens used and items cut");
        }
    }

    /// An item of so many characters, with an id.
    struct Sized(usize, u64);

    impl Footprint for Sized {
        fn chars(&self) -> usize {
            self.0
        }
    }

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
    fn each_kind_indexes_its_own_place_in_the_layers() {
        for (n, k) in LayerKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, n, "{k:?} is declared where ALL lists it");
        }
        let mut layers = Layers::default();
        layers.put(LayerKind::Attempts, Layer::Records(Vec::new()));
        assert!(matches!(layers.get(LayerKind::Construct), Layer::Patterns(_)));
        assert!(matches!(layers.get(LayerKind::Documents), Layer::Sections(_)));
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
