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
/// pronouns that queries are made of).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
    "do", "does", "did", "how", "what", "where", "when", "which", "who", "why", "we", "our", "us", "i", "my", "me",
    "you", "your", "can", "should", "would", "could", "has", "have", "had", "been", "from", "so", "its",
];

fn analyzer(derived: bool) -> TextAnalyzer {
    TextAnalyzer::builder(NeoTokenizer { derived }).build()
}

/// The parts of a word at its case changes (`parseConfig` -> parse, config; `HTTPServer` -> http,
/// server), lowercased; nothing when it is a single part. (`_` already separates words.)
fn identifier_parts(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            continue;
        }
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

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// One index term: its byte span in the text, its word position (every term of one word shares
/// it), its text, and whether it is derived (a stem, an identifier part, a compound) rather than
/// the word as written.
pub type IndexTerm = (usize, usize, usize, String, bool);

/// Add `term` unless it is a stop word, too long, or already there for this word (of its kind).
fn push(out: &mut Vec<IndexTerm>, span: (usize, usize), position: usize, term: String, derived: bool) {
    let repeated = out.iter().rev().take_while(|t| t.2 == position).any(|t| t.3 == term && t.4 == derived);
    if term.len() <= MAX_WORD && !STOP_WORDS.contains(&term.as_str()) && !repeated {
        out.push((span.0, span.1, position, term, derived));
    }
}

/// The index terms of `text` (see the module docs).
pub fn terms(text: &str) -> Vec<IndexTerm> {
    analyse(text, true)
}

/// [`terms`], or with `derived` false only the words as written: the `text` field's tokenizer
/// then skips the stemming and splitting it would throw away.
fn analyse(text: &str, derived: bool) -> Vec<IndexTerm> {
    // Words are runs of letters and digits, as tantivy's simple tokenizer cut them, so `text`
    // scores prose and snake_case exactly as before; `_` and `::` join words into compounds.
    let is_word = |c: char| c.is_alphanumeric();
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut position = 0;
    // Where the current `a::b::c` compound began (a word index), if the previous word joined it.
    let mut compound_from: Option<usize> = None;
    for (n, &(from, to)) in words.iter().enumerate() {
        let word = &text[from..to];
        let lower = word.to_lowercase();
        let before = out.len();
        push(&mut out, (from, to), position, lower.clone(), false);
        // A function word has no derived terms either ("was" would stem to "wa", "does" to "doe").
        if !derived || STOP_WORDS.contains(&lower.as_str()) {
            if out.len() > before {
                position += 1;
            }
            continue;
        }
        let parts = identifier_parts(word);
        // Derived: every word once, by its stem when it is prose (letters only), so the field's
        // length is the words' count as in `text`; then an identifier's parts and their stems.
        let stem =
            if lower.chars().all(char::is_alphabetic) { stemmer().stem(&lower).into_owned() } else { lower.clone() };
        push(&mut out, (from, to), position, stem, true);
        for part in &parts {
            push(&mut out, (from, to), position, part.clone(), true);
            if part.chars().all(char::is_alphabetic) {
                push(&mut out, (from, to), position, stemmer().stem(part).into_owned(), true);
            }
        }
        // `parse_config`, `path::segments`: the compound as a whole too, with its last word.
        let joined = n > 0 && matches!(&text[words[n - 1].1..from], "::" | "_" | "__");
        compound_from = if joined { compound_from.or(Some(n - 1)) } else { None };
        if let Some(first) = compound_from {
            let span = (words[first].0, to);
            push(&mut out, span, position, text[span.0..span.1].to_lowercase(), true);
        }
        if out.len() > before {
            position += 1;
        }
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
        let derived = self.derived;
        let mine: Vec<IndexTerm> = analyse(text, derived).into_iter().filter(|t| t.4 == derived).collect();
        Terms { terms: mine.into_iter(), token: Token::default() }
    }
}

impl TokenStream for Terms {
    fn advance(&mut self) -> bool {
        match self.terms.next() {
            Some((from, to, position, text, _)) => {
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

/// A tantivy index of record texts keyed by ordinal: the words as written in `text`, the derived
/// terms in `derived` (each field normalised by its own length, so stems do not make a record
/// look longer to the words' BM25).
pub struct Lexical {
    index: Index,
    reader: IndexReader,
    key: Field,
    text: Field,
    derived: Field,
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let key = b.add_u64_field("key", INDEXED | STORED);
    let field = |name: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(name).set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
    };
    let text = b.add_text_field("text", field(ANALYZER));
    let derived = b.add_text_field("derived", field(DERIVED));
    (b.build(), key, text, derived)
}

impl Lexical {
    pub fn create(dir: &Path) -> tantivy::Result<Lexical> {
        std::fs::create_dir_all(dir)?;
        let (schema, key, text, derived) = schema();
        let index = Index::create_in_dir(dir, schema)?;
        Self::with(index, key, text, derived)
    }

    /// An index held in memory (the construct library: a few dozen documents).
    pub fn in_memory() -> tantivy::Result<Lexical> {
        let (schema, key, text, derived) = schema();
        Self::with(Index::create_in_ram(schema), key, text, derived)
    }

    pub fn open(dir: &Path) -> tantivy::Result<Lexical> {
        let index = Index::open_in_dir(dir)?;
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
        Ok(Lexical { index, reader, key, text, derived })
    }

    /// Add documents with keys `first_key`, `first_key + 1`, … and commit.
    pub fn add(&mut self, first_key: u64, docs: &[(crate::record::RecordId, String)]) -> tantivy::Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let mut writer: tantivy::IndexWriter = self.index.writer_with_num_threads(1, 32_000_000)?;
        for (i, (_, text)) in docs.iter().enumerate() {
            writer.add_document(
                doc!(self.key => first_key + i as u64, self.text => text.as_str(), self.derived => text.as_str()),
            )?;
        }
        writer.commit()?;
        // Let the merge policy's merges finish: a writer dropped at once cancels them, and every
        // small catch-up (one new fact) would leave a segment behind, hundreds of them in a
        // busy memory, each making commits, reloads and searches slower.
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
    }

    /// Documents held (their keys are `0..num_docs`: documents are only ever appended).
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// BM25 search: every term the query's text yields is one clause of an OR query, on the
    /// field of its kind; a derived term's at [`STEM_WEIGHT`].
    pub fn search(&self, query: &str, limit: usize) -> tantivy::Result<Vec<(u64, f32)>> {
        let mut seen = std::collections::HashSet::new();
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms(query)
            .into_iter()
            .filter(|t| seen.insert((t.3.clone(), t.4)))
            .map(|(_, _, _, text, derived)| {
                let field = if derived { self.derived } else { self.text };
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(field, &text), IndexRecordOption::WithFreqs));
                let q: Box<dyn Query> = if derived { Box::new(BoostQuery::new(q, STEM_WEIGHT)) } else { q };
                (Occur::Should, q)
            })
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
        let of = |d: bool| t.iter().filter(|t| t.4 == d).map(|t| t.3.clone()).collect();
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
            let only: Vec<String> = analyse(text, false).into_iter().map(|t| t.3).collect();
            assert_eq!(only, words(text).0, "the words field's tokenizer yields the same words");
        }
        // Every term of a word shares its position; the next word takes the next one.
        let t = terms("parseConfig now");
        assert!(t[..5].iter().all(|t| t.2 == 0) && t[5].2 == 1, "{t:?}");
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
    fn the_exact_form_ranks_above_a_stem_only_match() {
        let l = index(&["the service was configured", "the service configuration"]);
        let top = l.search("configuration", 2).expect("search");
        assert_eq!(top[0].0, 1, "{top:?}");
    }
}
