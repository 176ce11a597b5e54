//! The lexical index: tantivy with BM25, one document per fact or attempt (and the Construct's
//! in-memory index of patterns).
//!
//! The analyser ([`terms`]) reads prose and code alike. Words are runs of letters and digits,
//! lowercased; common English function words are dropped, so that a query's "how", "to" and
//! "the" do not match every record. Each word is indexed as written (field `text`, whose BM25 is
//! what it was before stems) and, in a second field (`derived`), once more by its English stem
//! ("commits" as "commit"), with its case-change parts (`parseConfig` as `parse`, `config`) and
//! the whole of a `_` or `::` compound (`parse_config`, `path::segments`). So a stem matches any
//! inflection and "parse config" finds either spelling, while the word as written, which matches
//! in both fields, ranks first; and stems never make a record look longer to the words' BM25. A
//! query is analysed the same way and every term it yields is one clause of a BM25 OR query (no
//! query syntax: any text is a valid query).
//!
//! A warm session does not commit the few records each of its writes adds: tantivy spends about
//! 5 ms on a segment of any size (it zeroes, then scans, hash tables sized for a large segment),
//! on a second core that a recall's query embedding wants. They are *held* in memory instead
//! ([`Lexical::hold`]), analysed by the very analysers the index uses, and every search and
//! statistic counts them exactly as if they were committed: BM25's document count, average length
//! and document frequencies include them ([`WithHeld`]), and each is scored by tantivy's own
//! `Bm25Weight`. They are committed with the next larger catch-up, past [`HELD_UP_TO`], and when
//! the caches are let go.

use std::collections::HashMap;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, INDEXED, STORED};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term};

/// The analyzer's name in the schema: a cache built with another analyzer fails the schema
/// check in [`Lexical::open`] and is rebuilt (`neo_en`, before stems and identifier parts, is).
const ANALYZER: &str = "neo_words";
/// The derived field's analyzer.
const DERIVED: &str = "neo_derived";

/// The weight of a query's derived terms (stems, identifier parts) beside its words: a record
/// with another inflection or spelling matches, one with the very word ranks above it.
pub const STEM_WEIGHT: f32 = 0.5;

/// Words longer than this (in bytes) are not indexed: hashes, base64, minified code.
const MAX_WORD: usize = 40;

/// Words too common to tell records apart (Lucene's English list, plus the question words and
/// pronouns that queries are made of), sorted so that a look-up is a binary search.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does", "for", "from",
    "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or",
    "our", "should", "so", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "us", "was",
    "we", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// A word of at most eight ASCII bytes as one number, so a stop-word look-up compares integers.
fn packed(word: &str) -> Option<u64> {
    (word.len() <= 8 && word.is_ascii()).then(|| {
        let mut b = [0u8; 8];
        b[..word.len()].copy_from_slice(word.as_bytes());
        u64::from_be_bytes(b)
    })
}

/// Whether `word` (lowercase) is too common to tell texts apart.
pub fn is_stop(word: &str) -> bool {
    static KEYS: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    // Big-endian packing keeps the words' order, so the sorted list packs to a sorted list.
    let keys = KEYS.get_or_init(|| STOP_WORDS.iter().filter_map(|w| packed(w)).collect());
    packed(word).is_some_and(|k| keys.binary_search(&k).is_ok())
}

fn analyzer(derived: bool) -> TextAnalyzer {
    TextAnalyzer::builder(NeoTokenizer { derived }).build()
}

/// The parts of a word at its case changes (`parseConfig` -> parse, config; `HTTPServer` -> http,
/// server), lowercased; nothing when it is a single part (most words: the test for that is a scan
/// of its bytes, with no allocation).
fn identifier_parts(word: &str) -> Vec<String> {
    // Only a capital after the first character can start a second part.
    if !word.char_indices().skip(1).any(|(_, c)| c.is_uppercase()) {
        return Vec::new();
    }
    let chars: Vec<char> = word.chars().collect();
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if boundary && !cur.is_empty() {
            parts.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
}

/// The English (Porter 2) stem of a lowercased word of letters. Stemming is the analyser's
/// dearest step and words repeat (a corpus of 5,000 abstracts has 1.3 million words and 30,000
/// distinct ones), so each thread keeps the stems it made, up to a bound.
fn stem(word: &str) -> String {
    const KEPT: usize = 100_000;
    thread_local! {
        static STEMS: std::cell::RefCell<std::collections::HashMap<String, String>> = Default::default();
    }
    STEMS.with(|cell| {
        let mut stems = cell.borrow_mut();
        if let Some(s) = stems.get(word) {
            return s.clone();
        }
        static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
        let s = STEMMER
            .get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
            .stem(word)
            .into_owned();
        if stems.len() >= KEPT {
            stems.clear();
        }
        stems.insert(word.to_string(), s.clone());
        s
    })
}

fn lowercase(word: &str) -> String {
    if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    }
}

/// One index term: its byte span in the text, its word position (every term of one word shares
/// it), its text, and whether it is derived (a stem, an identifier part, a compound) rather than
/// the word as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexTerm {
    pub from: usize,
    pub to: usize,
    pub position: usize,
    pub text: String,
    pub derived: bool,
}

/// Which terms [`analyse`] yields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Yield {
    Words,
    Derived,
    Both,
}

/// Add `term` unless it is a stop word, too long, or already there for this word (of its kind).
fn push(out: &mut Vec<IndexTerm>, span: (usize, usize), position: usize, term: String, derived: bool) {
    if term.len() > MAX_WORD || is_stop(&term) {
        return;
    }
    let repeated =
        out.iter().rev().take_while(|t| t.position == position).any(|t| t.derived == derived && t.text == term);
    if !repeated {
        out.push(IndexTerm { from: span.0, to: span.1, position, text: term, derived });
    }
}

/// The index terms of `text` (see the module docs).
pub fn terms(text: &str) -> Vec<IndexTerm> {
    analyse(text, Yield::Both)
}

/// [`terms`], or only the words as written (the `text` field's tokenizer), or only the derived
/// terms (the `derived` field's): each tokenizer skips the work the other field needs. A word's
/// position is the same in every case, since it counts the words that yielded a term as written.
fn analyse(text: &str, what: Yield) -> Vec<IndexTerm> {
    // Words are runs of letters and digits, as tantivy's simple tokenizer cut them, so `text`
    // scores prose and snake_case exactly as before; `_` and `::` join words into compounds.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(words.len() * if what == Yield::Both { 2 } else { 1 });
    let mut position = 0;
    // Where the current `a::b::c` compound began (a word index), if the previous word joined it.
    let mut compound_from: Option<usize> = None;
    for (n, &(from, to)) in words.iter().enumerate() {
        let word = &text[from..to];
        let lower = lowercase(word);
        // A word too long or a function word takes no position and has no derived terms ("was"
        // would stem to "wa", "does" to "doe").
        if lower.len() > MAX_WORD || is_stop(&lower) {
            compound_from = None;
            continue;
        }
        let joined = n > 0 && matches!(&text[words[n - 1].1..from], "::" | "_" | "__");
        compound_from = if joined { compound_from.or(Some(n - 1)) } else { None };
        if what == Yield::Words {
            out.push(IndexTerm { from, to, position, text: lower, derived: false });
            position += 1;
            continue;
        }
        // Derived: every word once, by its stem when it is prose (letters only), so the field's
        // length is the words' count as in `text`; then an identifier's parts and their stems.
        let stemmed = if lower.chars().all(char::is_alphabetic) { stem(&lower) } else { lower.clone() };
        if what == Yield::Both {
            out.push(IndexTerm { from, to, position, text: lower, derived: false });
        }
        push(&mut out, (from, to), position, stemmed, true);
        for part in identifier_parts(word) {
            let part_stem = part.chars().all(char::is_alphabetic).then(|| stem(&part));
            push(&mut out, (from, to), position, part, true);
            if let Some(s) = part_stem {
                push(&mut out, (from, to), position, s, true);
            }
        }
        // `parse_config`, `path::segments`: the compound as a whole too, with its last word.
        if let Some(first) = compound_from {
            let span = (words[first].0, to);
            push(&mut out, span, position, lowercase(&text[span.0..span.1]), true);
        }
        position += 1;
    }
    out
}

/// [`terms`] of one kind (as written, or derived) as a tantivy tokenizer.
#[derive(Clone)]
struct NeoTokenizer {
    derived: bool,
}

struct Terms {
    terms: std::vec::IntoIter<IndexTerm>,
    token: Token,
}

impl Tokenizer for NeoTokenizer {
    type TokenStream<'a> = Terms;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> Terms {
        let mine = analyse(text, if self.derived { Yield::Derived } else { Yield::Words });
        Terms { terms: mine.into_iter(), token: Token::default() }
    }
}

impl TokenStream for Terms {
    fn advance(&mut self) -> bool {
        match self.terms.next() {
            Some(IndexTerm { from, to, position, text, .. }) => {
                self.token = Token { offset_from: from, offset_to: to, position, text, position_length: 1 };
                true
            }
            None => false,
        }
    }
    fn token(&self) -> &Token {
        &self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// tantivy's directory on disk, without its `fsync`s: every commit synced each new segment file,
/// `meta.json` and the directory, which made a warm session's catch-up after one write (one
/// document) cost 6–7 ms of a 7 ms commit. The index is a cache of the records, checked against
/// its stamp and rebuilt when it does not open; what a crash of the whole machine could lose, a
/// rebuild restores. (A crash of the process loses nothing: written data is in the kernel's page
/// cache.)
#[derive(Clone, Debug)]
struct Unsynced {
    inner: tantivy::directory::MmapDirectory,
    root: std::path::PathBuf,
}

impl Unsynced {
    fn open(dir: &Path) -> tantivy::Result<Unsynced> {
        let inner = tantivy::directory::MmapDirectory::open(dir)?;
        Ok(Unsynced { inner, root: dir.to_path_buf() })
    }
}

/// A file written whole and closed, never synced.
struct PlainFile(std::fs::File);

impl std::io::Write for PlainFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl tantivy::directory::TerminatingWrite for PlainFile {
    fn terminate_ref(&mut self, _: tantivy::directory::AntiCallToken) -> std::io::Result<()> {
        std::io::Write::flush(&mut self.0)
    }
}

impl tantivy::Directory for Unsynced {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> Result<std::sync::Arc<dyn tantivy::directory::FileHandle>, tantivy::directory::error::OpenReadError> {
        self.inner.get_file_handle(path)
    }
    fn delete(&self, path: &Path) -> Result<(), tantivy::directory::error::DeleteError> {
        self.inner.delete(path)
    }
    fn exists(&self, path: &Path) -> Result<bool, tantivy::directory::error::OpenReadError> {
        self.inner.exists(path)
    }
    fn open_write(
        &self,
        path: &Path,
    ) -> Result<tantivy::directory::WritePtr, tantivy::directory::error::OpenWriteError> {
        use tantivy::directory::error::OpenWriteError;
        let file =
            std::fs::OpenOptions::new().write(true).create_new(true).open(self.root.join(path)).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(e, path.to_path_buf())
                }
            })?;
        Ok(std::io::BufWriter::new(Box::new(PlainFile(file))))
    }
    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, tantivy::directory::error::OpenReadError> {
        self.inner.atomic_read(path)
    }
    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        // Whole or not at all (a reader never sees half a `meta.json`), without the sync.
        let target = self.root.join(path);
        let tmp = target.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, data).and_then(|()| std::fs::rename(&tmp, &target))
    }
    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn acquire_lock(
        &self,
        lock: &tantivy::directory::Lock,
    ) -> Result<tantivy::directory::DirectoryLock, tantivy::directory::error::LockError> {
        self.inner.acquire_lock(lock)
    }
    fn watch(&self, callback: tantivy::directory::WatchCallback) -> tantivy::Result<tantivy::directory::WatchHandle> {
        self.inner.watch(callback)
    }
}

/// Add `texts` to `index` with keys from `first_key` and commit. `fields`: key, text, derived.
fn commit(index: &Index, fields: [Field; 3], first_key: u64, texts: &[&str]) -> tantivy::Result<()> {
    let [key, text, derived] = fields;
    // A rebuild (thousands of documents) analyses on two threads, which halves its wait on two
    // cores; a catch-up of a few writes stays on one, with no thread to start.
    let threads = if texts.len() >= 1_000 { 2 } else { 1 };
    let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(threads, 32_000_000)?;
    writer.set_merge_policy(Box::new(merge_policy()));
    for (i, t) in texts.iter().enumerate() {
        writer.add_document(doc!(key => first_key + i as u64, text => *t, derived => *t))?;
    }
    writer.commit()?;
    // Let the merge policy's merges finish: a writer dropped at once cancels them, and every
    // small catch-up (one new fact) would leave a segment behind, hundreds of them in a busy
    // memory, each making commits, reloads and searches slower.
    writer.wait_merging_threads()?;
    Ok(())
}

/// tantivy's log merge policy with its lowest layer at [`MIN_LAYER_DOCS`] documents instead of
/// 10,000. With the default, every segment under 10,000 documents sits in one layer, so in a
/// memory of a few thousand records (or one just past 10,000, whose main segment counts as
/// 10,000) every eighth one-fact catch-up merged the whole index again: a profile of a warm
/// server at 10k facts, a write and a recall at a time, spent 9% of its CPU in those merges, and
/// the catch-up that set one off waited for it. Now one-document segments merge with each other,
/// eight at a time, and the main segment only with segments of its own size.
fn merge_policy() -> tantivy::merge_policy::LogMergePolicy {
    let mut policy = tantivy::merge_policy::LogMergePolicy::default();
    policy.set_min_layer_size(MIN_LAYER_DOCS);
    policy
}

/// The lowest layer of [`merge_policy`], in documents.
const MIN_LAYER_DOCS: u32 = 16;

/// A tantivy index of record texts keyed by ordinal: the words as written in `text`, the derived
/// terms in `derived` (each field normalised by its own length, so stems do not make a record
/// look longer to the words' BM25).
pub struct Lexical {
    index: Index,
    reader: IndexReader,
    key: Field,
    text: Field,
    derived: Field,
    /// A commit running on a thread of its own ([`Lexical::add_behind`]); every read waits for it.
    behind: std::sync::Mutex<Option<std::thread::JoinHandle<tantivy::Result<()>>>>,
    /// Documents after the committed ones, in key order, held in memory ([`Lexical::hold`]).
    held: Vec<Held>,
}

/// Up to this many documents are held in memory rather than committed ([`Lexical::hold`]).
pub const HELD_UP_TO: usize = 32;

/// A document held in memory, analysed as tantivy analyses it when it is committed.
struct Held {
    text: String,
    /// For `text` and `derived`: the number of tokens (what tantivy records as the field's
    /// length) and each term's frequency.
    fields: [(u32, HashMap<String, u32>); 2],
}

impl Held {
    fn tf(&self, slot: usize, term: &str) -> u32 {
        self.fields[slot].1.get(term).copied().unwrap_or(0)
    }
}

/// BM25's statistics over the committed documents and the held ones together: what tantivy's
/// searcher would count if the held documents were committed.
struct WithHeld<'a> {
    searcher: &'a Searcher,
    held: &'a [Held],
    fields: [Field; 2],
}

impl WithHeld<'_> {
    fn slot(&self, field: Field) -> Option<usize> {
        self.fields.iter().position(|f| *f == field)
    }
}

impl Bm25StatisticsProvider for WithHeld<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let held: u64 = match self.slot(field) {
            Some(i) => self.held.iter().map(|h| u64::from(h.fields[i].0)).sum(),
            None => 0,
        };
        Ok(Bm25StatisticsProvider::total_num_tokens(self.searcher, field)? + held)
    }
    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(Bm25StatisticsProvider::total_num_docs(self.searcher)? + self.held.len() as u64)
    }
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let held = match (self.slot(term.field()), term.value().as_str()) {
            (Some(i), Some(word)) => self.held.iter().filter(|h| h.tf(i, word) > 0).count() as u64,
            _ => 0,
        };
        Ok(self.searcher.doc_freq(term)? + held)
    }
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let key = b.add_u64_field("key", INDEXED | STORED);
    let field = |name: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(name).set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let text = b.add_text_field("text", field(ANALYZER));
    let derived = b.add_text_field("derived", field(DERIVED));
    (b.build(), key, text, derived)
}

impl Drop for Lexical {
    /// A commit still running behind finishes (and releases the caches' lock) first.
    fn drop(&mut self) {
        let _ = self.settle();
    }
}

impl Lexical {
    pub fn create(dir: &Path) -> tantivy::Result<Lexical> {
        std::fs::create_dir_all(dir)?;
        let (schema, key, text, derived) = schema();
        let directory = Unsynced::open(dir)?;
        if Index::exists(&directory)? {
            return Err(tantivy::TantivyError::IndexAlreadyExists);
        }
        let index = Index::create(directory, schema, tantivy::IndexSettings::default())?;
        Self::with(index, key, text, derived)
    }

    /// An index held in memory (the construct library: a few dozen documents).
    pub fn in_memory() -> tantivy::Result<Lexical> {
        let (schema, key, text, derived) = schema();
        Self::with(Index::create_in_ram(schema), key, text, derived)
    }

    pub fn open(dir: &Path) -> tantivy::Result<Lexical> {
        let index = Index::open(Unsynced::open(dir)?)?;
        let (expected, key, text, derived) = schema();
        if index.schema() != expected {
            return Err(tantivy::TantivyError::SchemaError("the schema changed".into()));
        }
        Self::with(index, key, text, derived)
    }

    fn with(index: Index, key: Field, text: Field, derived: Field) -> tantivy::Result<Lexical> {
        index.tokenizers().register(ANALYZER, analyzer(false));
        index.tokenizers().register(DERIVED, analyzer(true));
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Lexical { index, reader, key, text, derived, behind: std::sync::Mutex::new(None), held: Vec::new() })
    }

    /// The texts to commit for documents from `first_key` (which must follow the held ones):
    /// the held documents' first, and the key the commit starts at.
    fn with_held<'a>(&'a self, first_key: u64, texts: &[&'a str]) -> tantivy::Result<(u64, Vec<&'a str>)> {
        let committed = self.reader.searcher().num_docs();
        if first_key != committed + self.held.len() as u64 {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "documents from key {first_key} do not follow the {committed} committed and {} held",
                self.held.len()
            )));
        }
        Ok((committed, self.held.iter().map(|h| h.text.as_str()).chain(texts.iter().copied()).collect()))
    }

    /// Add documents with keys `first_key`, `first_key + 1`, … and commit (with any held).
    pub fn add(&mut self, first_key: u64, docs: &[(crate::record::RecordId, String)]) -> tantivy::Result<()> {
        self.settle()?;
        if docs.is_empty() && self.held.is_empty() {
            return Ok(());
        }
        // Borrowed, not copied: a rebuild hands over every record's text.
        let texts: Vec<&str> = docs.iter().map(|(_, t)| t.as_str()).collect();
        let (from, texts) = self.with_held(first_key, &texts)?;
        commit(&self.index, [self.key, self.text, self.derived], from, &texts)?;
        self.held.clear();
        self.reader.reload()?;
        Ok(())
    }

    /// [`Lexical::add`] on a thread of its own, which holds `lock` (the caches' lock) until the
    /// commit is done, so that no other process reads or writes the index before it lands. A
    /// recall runs it while it embeds its query, and waits for it only when it searches this
    /// index ([`Lexical::settle`]).
    pub fn add_behind(&mut self, first_key: u64, texts: Vec<String>, lock: std::fs::File) -> tantivy::Result<()> {
        self.settle()?;
        if texts.is_empty() && self.held.is_empty() {
            return Ok(());
        }
        let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (from, all) = self.with_held(first_key, &borrowed)?;
        let all: Vec<String> = all.into_iter().map(str::to_string).collect();
        let index = self.index.clone();
        let fields = [self.key, self.text, self.derived];
        let job = std::thread::Builder::new()
            .name("neo-lexical".into())
            .spawn(move || {
                let texts: Vec<&str> = all.iter().map(String::as_str).collect();
                let done = commit(&index, fields, from, &texts);
                drop(lock);
                done
            })
            .map_err(|e| tantivy::TantivyError::SystemError(format!("cannot start the lexical catch-up: {e}")))?;
        // Searches wait for the commit (`settle`), which then holds these documents.
        self.held.clear();
        *self.behind.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        Ok(())
    }

    /// Hold documents with keys `first_key`, `first_key + 1`, … in memory, searchable at once and
    /// counted in every statistic, without a commit: a warm session's catch-up after its own
    /// write (see the module docs). The caller commits them later ([`Lexical::add`],
    /// [`Lexical::add_behind`] or [`Lexical::commit_held`]) and holds at most [`HELD_UP_TO`].
    pub fn hold(&mut self, first_key: u64, texts: Vec<String>) -> tantivy::Result<()> {
        self.settle()?;
        self.with_held(first_key, &[])?;
        let mut analysers = [ANALYZER, DERIVED].map(|name| self.index.tokenizers().get(name));
        for text in texts {
            let fields = analysers.each_mut().map(|a| {
                let mut counts: HashMap<String, u32> = HashMap::new();
                let mut n = 0u32;
                if let Some(a) = a {
                    // Counted as tantivy's postings writer counts: every token but one it drops
                    // for its length.
                    a.token_stream(&text).process(&mut |t: &Token| {
                        if t.text.len() <= tantivy::tokenizer::MAX_TOKEN_LEN {
                            n += 1;
                            *counts.entry(t.text.clone()).or_default() += 1;
                        }
                    });
                }
                (n, counts)
            });
            self.held.push(Held { text, fields });
        }
        Ok(())
    }

    /// How many documents are held in memory.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Commit the held documents now, if the index on disk still ends where this one's commits
    /// do (another process may have caught it up meanwhile: then those are dropped as they are
    /// there). Ask this with the caches' lock held.
    pub fn commit_held(&mut self) -> tantivy::Result<()> {
        self.reconcile()?;
        self.add(self.num_docs(), &[])
    }

    /// Read what other processes committed to the index on disk since this one last did: held
    /// documents it now holds are let go (keys are positions in the shared id list, so the
    /// same ordinals are the same records). Ask this with the caches' lock held. An index that
    /// grew past the held documents reads as longer than the id list, which the caller rebuilds.
    pub fn reconcile(&mut self) -> tantivy::Result<()> {
        self.settle()?;
        if self.held.is_empty() {
            return Ok(());
        }
        let before = self.reader.searcher().num_docs();
        // The index's metadata says what is on disk without reopening every segment (a reload
        // opens each segment afresh: a few milliseconds, on every command of a warm session).
        let on_disk: u64 = self.index.load_metas()?.segments.iter().map(|s| u64::from(s.num_docs())).sum();
        if on_disk == before {
            return Ok(());
        }
        self.reader.reload()?;
        let now = self.reader.searcher().num_docs();
        let landed = (now.saturating_sub(before) as usize).min(self.held.len());
        self.held.drain(..landed);
        Ok(())
    }

    /// Wait for a commit running behind ([`Lexical::add_behind`]) and read what it wrote.
    pub fn settle(&self) -> tantivy::Result<()> {
        let job = self.behind.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(job) = job {
            job.join().map_err(|_| tantivy::TantivyError::SystemError("the lexical catch-up failed".into()))??;
            self.reader.reload()?;
        }
        Ok(())
    }

    /// Documents held, committed or in memory (their keys are `0..num_docs`: documents are only
    /// ever appended).
    pub fn num_docs(&self) -> u64 {
        // A commit that failed behind leaves the index short: the caller catches it up again.
        let _ = self.settle();
        self.reader.searcher().num_docs() + self.held.len() as u64
    }

    /// BM25 search: every term the query's text yields is one clause of an OR query, on the
    /// field of its kind; a derived term's at [`STEM_WEIGHT`].
    pub fn search(&self, query: &str, limit: usize) -> tantivy::Result<Vec<(u64, f32)>> {
        self.search_expanded(query, &[], limit)
    }

    /// How many documents hold `word` (as written) and how many there are: what an expansion
    /// weighs a feedback word's rarity by.
    pub fn doc_freq(&self, word: &str) -> tantivy::Result<(u64, u64)> {
        self.settle()?;
        let searcher = self.reader.searcher();
        let stats = WithHeld { searcher: &searcher, held: &self.held, fields: [self.text, self.derived] };
        Ok((stats.doc_freq(&Term::from_field_text(self.text, word))?, stats.total_num_docs()?))
    }

    /// [`Lexical::search`] with `extra` words (as written, each with its own boost) added to
    /// the OR query: a pseudo-relevance feedback expansion.
    pub fn search_expanded(
        &self,
        query: &str,
        extra: &[(String, f32)],
        limit: usize,
    ) -> tantivy::Result<Vec<(u64, f32)>> {
        self.settle()?;
        let mut seen = std::collections::HashSet::new();
        // Each clause: its term and boost (the query's words, its derived terms, the extra words).
        let clauses: Vec<(Term, f32)> = terms(query)
            .into_iter()
            .filter(|t| seen.insert((t.text.clone(), t.derived)))
            .map(|IndexTerm { text, derived, .. }| {
                let field = if derived { self.derived } else { self.text };
                (Term::from_field_text(field, &text), if derived { STEM_WEIGHT } else { 1.0 })
            })
            .chain(extra.iter().map(|(w, boost)| (Term::from_field_text(self.text, w), *boost)))
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let q = BooleanQuery::new(
            clauses
                .iter()
                .map(|(term, boost)| {
                    let q: Box<dyn Query> = Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
                    let q: Box<dyn Query> = if *boost == 1.0 { q } else { Box::new(BoostQuery::new(q, *boost)) };
                    (Occur::Should, q)
                })
                .collect(),
        );
        let searcher = self.reader.searcher();
        let collector = TopDocs::with_limit(limit.max(1)).order_by_score();
        let stats = WithHeld { searcher: &searcher, held: &self.held, fields: [self.text, self.derived] };
        let top = if self.held.is_empty() {
            searcher.search(&q, &collector)?
        } else {
            searcher.search_with_statistics_provider(&q, &collector, &stats)?
        };
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            if let Some(k) = d.get_first(self.key).and_then(|v| v.as_u64()) {
                out.push((k, score));
            }
        }
        if self.held.is_empty() {
            return Ok(out);
        }
        // The held documents, scored clause by clause as tantivy scores a committed one: its
        // `Bm25Weight` from the same statistics, boosted as a `BoostQuery` boosts it.
        let weights: Vec<(usize, String, Bm25Weight)> = clauses
            .iter()
            .filter_map(|(term, boost)| {
                let slot = stats.slot(term.field())?;
                let word = term.value().as_str()?.to_string();
                Some(
                    Bm25Weight::for_terms(&stats, std::slice::from_ref(term)).map(|w| (slot, word, w.boost_by(*boost))),
                )
            })
            .collect::<tantivy::Result<_>>()?;
        let first = searcher.num_docs();
        let mut held: Vec<(u64, f32)> = Vec::new();
        for (i, h) in self.held.iter().enumerate() {
            let mut score = 0.0f32;
            let mut matched = false;
            for (slot, word, w) in &weights {
                let tf = h.tf(*slot, word);
                if tf > 0 {
                    let norm = tantivy::fieldnorm::FieldNormReader::fieldnorm_to_id(h.fields[*slot].0);
                    score += w.score(norm, tf);
                    matched = true;
                }
            }
            if matched {
                held.push((first + i as u64, score));
            }
        }
        held.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Merged best first; a held document goes after a committed one of the same score (as
        // its higher key would, once committed).
        let mut merged = Vec::with_capacity(limit);
        let (mut a, mut b) = (out.into_iter().peekable(), held.into_iter().peekable());
        while merged.len() < limit.max(1) {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if y.1 > x.1 => b.next(),
                (Some(_), _) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(hit) => merged.push(hit),
                None => break,
            }
        }
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (words as written, derived terms).
    fn words(text: &str) -> (Vec<String>, Vec<String>) {
        let t = terms(text);
        let of = |d: bool| t.iter().filter(|t| t.derived == d).map(|t| t.text.clone()).collect();
        (of(false), of(true))
    }

    #[test]
    fn words_are_kept_as_written_and_by_their_stem_and_identifiers_by_their_parts() {
        let w = |a: &[&str], d: &[&str]| -> (Vec<String>, Vec<String>) {
            (a.iter().map(|s| s.to_string()).collect(), d.iter().map(|s| s.to_string()).collect())
        };
        assert_eq!(words("Small commits"), w(&["small", "commits"], &["small", "commit"]));
        assert_eq!(words("parse_config"), w(&["parse", "config"], &["pars", "config", "parse_config"]));
        assert_eq!(words("parseConfig"), w(&["parseconfig"], &["parseconfig", "parse", "pars", "config"]));
        assert_eq!(words("HTTPServer"), w(&["httpserver"], &["httpserver", "http", "server"]));
        assert_eq!(words("std::io::stdout").1, ["std", "io", "std::io", "stdout", "std::io::stdout"]);
        assert_eq!(words("port 8080").1, ["port", "8080"], "every word once in the derived field");
        assert_eq!(words("how to retry the requests"), w(&["retry", "requests"], &["retri", "request"]));
        assert!(words(&"x".repeat(MAX_WORD + 1)).0.is_empty(), "a word past the limit is dropped");
        assert!(
            words("how was it done, does it").1 == ["done"],
            "function words have no stems: {:?}",
            words("how was it done, does it")
        );
        for text in ["Small commits", "parse_config parseConfig", "std::io::stdout", "how was it done"] {
            let only: Vec<(usize, String)> =
                analyse(text, Yield::Words).into_iter().map(|t| (t.position, t.text)).collect();
            let both = terms(text);
            let words: Vec<(usize, String)> =
                both.iter().filter(|t| !t.derived).map(|t| (t.position, t.text.clone())).collect();
            assert_eq!(only, words, "the words field's tokenizer yields the same words at the same positions");
            let derived: Vec<(usize, String)> =
                both.iter().filter(|t| t.derived).map(|t| (t.position, t.text.clone())).collect();
            let alone: Vec<(usize, String)> =
                analyse(text, Yield::Derived).into_iter().map(|t| (t.position, t.text)).collect();
            assert_eq!(alone, derived, "the derived field's tokenizer yields the same derived terms");
        }
        // Every term of a word shares its position; the next word takes the next one.
        let t = terms("parseConfig now");
        assert!(t[..5].iter().all(|t| t.position == 0) && t[5].position == 1, "{t:?}");
    }

    fn index(docs: &[&str]) -> Lexical {
        let mut l = Lexical::in_memory().expect("index");
        let docs: Vec<(crate::record::RecordId, String)> =
            docs.iter().map(|d| (crate::record::RecordId([0; 32]), d.to_string())).collect();
        l.add(0, &docs).expect("add");
        l
    }

    #[test]
    fn a_stem_finds_its_inflections_and_an_identifier_finds_its_words() {
        let l =
            index(&["Keep small commits", "parse the config at start", "fn parseConfig(path) loads it", "unrelated"]);
        let hits = |q: &str| l.search(q, 10).expect("search").into_iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(hits("commit"), [0], "\"commit\" finds \"small commits\"");
        assert_eq!(hits("committing"), [0]);
        let config = hits("parse_config");
        assert!(config.contains(&1) && config.contains(&2), "parse_config finds both spellings: {config:?}");
        assert!(hits("parse config").contains(&2), "words find the identifier");
        assert!(hits("how is it done?").is_empty(), "stop words and punctuation alone match nothing");
        assert!(hits("AND OR \"( title:").is_empty(), "no query syntax: any text is a valid query");
    }

    #[test]
    fn the_stop_words_are_sorted_and_short_enough_to_pack() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 8 && is_stop(w)));
        assert!(!is_stop("a\u{e9}") && !is_stop("andrew") && !is_stop(""));
        assert!(!is_stop("commit") && !is_stop("shoulder"));
    }

    #[test]
    fn one_fact_catch_ups_merge_with_each_other_and_leave_the_main_segment_alone() {
        let mut l = Lexical::in_memory().expect("index");
        let id = crate::record::RecordId([0; 32]);
        let main: Vec<_> = (0..300).map(|i| (id, format!("record {i} about the cache"))).collect();
        l.add(0, &main).expect("add");
        let segments = |l: &Lexical| -> Vec<(tantivy::index::SegmentId, u32)> {
            l.reader.searcher().segment_readers().iter().map(|s| (s.segment_id(), s.max_doc())).collect()
        };
        let first = segments(&l);
        assert_eq!(first.len(), 1, "{first:?}");
        // Twenty writes of one fact each (a warm session's catch-ups).
        for i in 0..20u64 {
            l.add(300 + i, &[(id, format!("new fact {i} about the cache"))]).expect("add");
        }
        let after = segments(&l);
        assert!(after.contains(&first[0]), "the main segment was merged again: {first:?} → {after:?}");
        assert!(after.len() <= 12, "the small segments merge with each other: {after:?}");
        assert_eq!(l.num_docs(), 320);
        assert_eq!(l.search("fact 7", 1).expect("search")[0].0, 307);
    }

    #[test]
    fn the_exact_form_ranks_above_a_stem_only_match() {
        let l = index(&["the service was configured", "the service configuration"]);
        let top = l.search("configuration", 2).expect("search");
        assert_eq!(top[0].0, 1, "{top:?}");
    }

    /// Documents of varied length and words, identifiers among them (deterministic).
    fn varied(n: usize) -> Vec<String> {
        let words = [
            "retry",
            "retries",
            "backoff",
            "parseConfig",
            "lock_file",
            "commit",
            "commits",
            "merge",
            "cache",
            "index",
            "socket",
            "timeout",
            "HTTPServer",
            "budget",
            "schema",
            "vector",
            "token",
            "branch",
            "worker",
            "queue",
        ];
        (0..n)
            .map(|i| {
                let len = 3 + (i * 7) % 23;
                (0..len).map(|j| words[(i * 31 + j * j * 17 + j) % words.len()]).collect::<Vec<_>>().join(" ")
            })
            .collect()
    }

    fn docs(texts: &[String]) -> Vec<(crate::record::RecordId, String)> {
        texts.iter().map(|t| (crate::record::RecordId([0; 32]), t.clone())).collect()
    }

    /// Documents held in memory are found and scored exactly as the same documents committed:
    /// every statistic of BM25 counts them, and their own scores are tantivy's.
    #[test]
    fn held_documents_search_exactly_as_committed_ones() {
        let texts = varied(120);
        let (first, rest) = texts.split_at(100);
        let mut committed = Lexical::in_memory().expect("index");
        committed.add(0, &docs(&texts)).expect("add");
        let mut held = Lexical::in_memory().expect("index");
        held.add(0, &docs(first)).expect("add");
        held.hold(100, rest[..12].to_vec()).expect("hold");
        held.hold(112, rest[12..].to_vec()).expect("hold");
        assert_eq!((held.held(), held.num_docs()), (20, 120));
        let extra = [("backoff".to_string(), 0.3f32), ("queue".to_string(), 1.0)];
        for q in ["retry backoff", "parse config", "commits merged into the branch", "HTTP server timeout", "lock"] {
            for (limit, extra) in [(5, &extra[..0]), (50, &extra[..]), (200, &extra[..])] {
                let want = committed.search_expanded(q, extra, limit).expect("search");
                let got = held.search_expanded(q, extra, limit).expect("search");
                assert!(got.iter().any(|(k, _)| *k >= 100) || limit == 5, "{q}: a held document is found");
                assert_eq!(got.len(), want.len(), "{q} (top {limit})");
                // The same scores, to the rounding of their sum: tantivy adds a document's clauses
                // in the order its scorers reach it, a held one's are added in query order.
                let same = |a: f32, b: f32| (a - b).abs() <= b.abs() * 4.0 * f32::EPSILON;
                for (g, w) in got.iter().zip(&want) {
                    assert!(same(g.1, w.1), "{q}: {g:?} {w:?}");
                }
                if limit == 200 {
                    let mut by_key = (got.clone(), want.clone());
                    by_key.0.sort_by_key(|h| h.0);
                    by_key.1.sort_by_key(|h| h.0);
                    for (g, w) in by_key.0.iter().zip(&by_key.1) {
                        assert!(
                            g.0 == w.0 && same(g.1, w.1),
                            "{q}: the same documents with the same scores: {g:?} {w:?}"
                        );
                    }
                }
            }
        }
        for word in ["retry", "queue", "absent"] {
            assert_eq!(held.doc_freq(word).expect("df"), committed.doc_freq(word).expect("df"), "{word}");
        }
        // Committed with the next addition, after the held ones, at the keys they were held at.
        held.add(120, &docs(&varied(121)[120..])).expect("add");
        assert_eq!((held.held(), held.num_docs()), (0, 121));
        committed.add(120, &docs(&varied(121)[120..])).expect("add");
        let keys =
            |l: &Lexical| l.search("retry backoff", 200).expect("s").into_iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(keys(&held), keys(&committed));
        // Keys must follow what is there.
        assert!(held.hold(7, vec!["x".into()]).is_err());
    }
}
