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

use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, INDEXED, STORED};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

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
        Ok(Lexical { index, reader, key, text, derived, behind: std::sync::Mutex::new(None) })
    }

    /// Add documents with keys `first_key`, `first_key + 1`, … and commit.
    pub fn add(&mut self, first_key: u64, docs: &[(crate::record::RecordId, String)]) -> tantivy::Result<()> {
        self.settle()?;
        if docs.is_empty() {
            return Ok(());
        }
        // Borrowed, not copied: a rebuild hands over every record's text.
        let texts: Vec<&str> = docs.iter().map(|(_, t)| t.as_str()).collect();
        commit(&self.index, [self.key, self.text, self.derived], first_key, &texts)?;
        self.reader.reload()?;
        Ok(())
    }

    /// [`Lexical::add`] on a thread of its own, which holds `lock` (the caches' lock) until the
    /// commit is done, so that no other process reads or writes the index before it lands. The
    /// commit of a one-fact catch-up costs a few milliseconds of tantivy's bookkeeping (a writer,
    /// a segment of its files, the metadata); a recall runs it while it embeds its query, and
    /// waits for it only when it searches this index ([`Lexical::settle`]).
    pub fn add_behind(&mut self, first_key: u64, texts: Vec<String>, lock: std::fs::File) -> tantivy::Result<()> {
        self.settle()?;
        if texts.is_empty() {
            return Ok(());
        }
        let index = self.index.clone();
        let fields = [self.key, self.text, self.derived];
        let job = std::thread::Builder::new()
            .name("neo-lexical".into())
            .spawn(move || {
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                let done = commit(&index, fields, first_key, &texts);
                drop(lock);
                done
            })
            .map_err(|e| tantivy::TantivyError::SystemError(format!("cannot start the lexical catch-up: {e}")))?;
        *self.behind.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
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

    /// Documents held (their keys are `0..num_docs`: documents are only ever appended).
    pub fn num_docs(&self) -> u64 {
        // A commit that failed behind leaves the index short: the caller catches it up again.
        let _ = self.settle();
        self.reader.searcher().num_docs()
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
        Ok((searcher.doc_freq(&Term::from_field_text(self.text, word))?, searcher.num_docs()))
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
        let extra = extra.iter().map(|(w, boost)| {
            let q: Box<dyn Query> =
                Box::new(TermQuery::new(Term::from_field_text(self.text, w), IndexRecordOption::WithFreqs));
            (Occur::Should, Box::new(BoostQuery::new(q, *boost)) as Box<dyn Query>)
        });
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms(query)
            .into_iter()
            .filter(|t| seen.insert((t.text.clone(), t.derived)))
            .map(|IndexTerm { text, derived, .. }| {
                let field = if derived { self.derived } else { self.text };
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(field, &text), IndexRecordOption::WithFreqs));
                let q: Box<dyn Query> = if derived { Box::new(BoostQuery::new(q, STEM_WEIGHT)) } else { q };
                (Occur::Should, q)
            })
            .chain(extra)
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let q = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher.search(&q, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            if let Some(k) = d.get_first(self.key).and_then(|v| v.as_u64()) {
                out.push((k, score));
            }
        }
        Ok(out)
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
}
