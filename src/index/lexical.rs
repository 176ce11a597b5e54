//! The lexical index: tantivy with BM25, one document per fact or attempt (and the Construct's
//! in-memory index of patterns). Text is split into words, lowercased, and common English function
//! words are dropped, so that a query's "how", "to" and "the" do not match every record.

use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, INDEXED, STORED};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, StopWordFilter, TextAnalyzer};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, TantivyDocument};

/// The analyzer's name in the schema: a cache built with another analyzer fails the schema
/// check in [`Lexical::open`] and is rebuilt.
const ANALYZER: &str = "neo_en";

/// Words too common to tell records apart (Lucene's English list, plus the question words and
/// pronouns that queries are made of).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
    "do", "does", "did", "how", "what", "where", "when", "which", "who", "why", "we", "our", "us", "i", "my", "me",
    "you", "your", "can", "should", "would", "could", "has", "have", "had", "been", "from", "so", "its",
];

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(STOP_WORDS.iter().map(|w| w.to_string())))
        .build()
}

/// A tantivy index of record texts keyed by ordinal.
pub struct Lexical {
    index: Index,
    reader: IndexReader,
    key: Field,
    text: Field,
}

fn schema() -> (Schema, Field, Field) {
    let mut b = Schema::builder();
    let key = b.add_u64_field("key", INDEXED | STORED);
    let indexing =
        TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text = b.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
    (b.build(), key, text)
}

impl Lexical {
    pub fn create(dir: &Path) -> tantivy::Result<Lexical> {
        std::fs::create_dir_all(dir)?;
        let (schema, key, text) = schema();
        let index = Index::create_in_dir(dir, schema)?;
        Self::with(index, key, text)
    }

    /// An index held in memory (the construct library: a few dozen documents).
    pub fn in_memory() -> tantivy::Result<Lexical> {
        let (schema, key, text) = schema();
        Self::with(Index::create_in_ram(schema), key, text)
    }

    pub fn open(dir: &Path) -> tantivy::Result<Lexical> {
        let index = Index::open_in_dir(dir)?;
        let (expected, key, text) = schema();
        if index.schema() != expected {
            return Err(tantivy::TantivyError::SchemaError("the schema changed".into()));
        }
        Self::with(index, key, text)
    }

    fn with(index: Index, key: Field, text: Field) -> tantivy::Result<Lexical> {
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Lexical { index, reader, key, text })
    }

    /// Add documents with keys `first_key`, `first_key + 1`, … and commit.
    pub fn add(&mut self, first_key: u64, docs: &[(crate::record::RecordId, String)]) -> tantivy::Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let mut writer: tantivy::IndexWriter = self.index.writer_with_num_threads(1, 32_000_000)?;
        for (i, (_, text)) in docs.iter().enumerate() {
            writer.add_document(doc!(self.key => first_key + i as u64, self.text => text.as_str()))?;
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

    /// BM25 search; the query is parsed leniently, so any text is a valid query.
    pub fn search(&self, query: &str, limit: usize) -> tantivy::Result<Vec<(u64, f32)>> {
        let parser = QueryParser::for_index(&self.index, vec![self.text]);
        let (q, _errors) = parser.parse_query_lenient(query);
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
