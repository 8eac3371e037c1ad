//! The full-text index over the passages: tantivy, BM25, in RAM, built once at start.
//!
//! Questions are never parsed as query syntax: they are run through the same analyzer as
//! the passages (lower-cased, English stop words dropped, stemmed) and each remaining term
//! is looked up in the title, heading and body fields, so `refunds` finds "refund" and a
//! question holding `:` or quotes cannot fail to parse.

use std::collections::BTreeSet;

use tantivy::collector::TopDocs;
use tantivy::directory::RamDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenizerManager,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument};

use super::pages::{Page, Passage};

const ANALYZER: &str = "docs";
/// The indexing buffer: the guides' terms fit many times over. (Its term table is sized from
/// it; tantivy's threaded writer insists on 15 MB, a few of them touched at once.)
const WRITER_BUDGET: usize = 1 << 20;
/// A word in a heading says more about the passage than one in its body.
const HEADING_BOOST: f32 = 2.0;
const TITLE_BOOST: f32 = 1.5;

pub struct SearchIndex {
    reader: IndexReader,
    title: Field,
    heading: Field,
    body: Field,
    analyzer: TextAnalyzer,
}

impl SearchIndex {
    /// Indexes every passage (document `i` is passage `i`). Blocking: a few milliseconds.
    pub fn build(pages: &[Page], passages: &[Passage]) -> tantivy::Result<Self> {
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let mut schema = Schema::builder();
        let title = schema.add_text_field("title", text.clone());
        let heading = schema.add_text_field("heading", text.clone());
        let body = schema.add_text_field("body", text);
        let id = schema.add_u64_field("passage", FAST | STORED);
        let analyzer = analyzer();
        let tokenizers = TokenizerManager::default();
        tokenizers.register(ANALYZER, analyzer.clone());
        // One segment, written on this thread: the threaded `IndexWriter` starts indexing and
        // merge threads and a 15 MB buffer for a few dozen passages, which under mimalloc
        // left the process about 28 MB larger. This writer is public but hidden from
        // tantivy's docs (meant for small in-memory indexes); the version is pinned to 0.27.
        let mut writer = Index::builder()
            .schema(schema.build())
            .tokenizers(tokenizers)
            .single_segment_index_writer::<TantivyDocument>(
                RamDirectory::create(),
                WRITER_BUDGET,
            )?;
        for (i, p) in passages.iter().enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(title, &pages[p.page].title);
            doc.add_text(heading, &p.heading);
            doc.add_text(body, &p.text);
            doc.add_u64(id, u64::try_from(i).unwrap_or(u64::MAX));
            writer.add_document(doc)?;
        }
        let index = writer.finalize()?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Self {
            reader,
            title,
            heading,
            body,
            analyzer,
        })
    }

    /// The passages that match `question`, best first, with their BM25 scores.
    pub fn search(&self, question: &str, limit: usize) -> tantivy::Result<Vec<(usize, f32)>> {
        let terms = self.terms(question);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in &terms {
            for (field, boost) in [
                (self.title, TITLE_BOOST),
                (self.heading, HEADING_BOOST),
                (self.body, 1.0),
            ] {
                let q = TermQuery::new(
                    tantivy::Term::from_field_text(field, t),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
            }
        }
        let searcher = self.reader.searcher();
        let hits = searcher.search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(limit).order_by_score(),
        )?;
        let mut out = Vec::with_capacity(hits.len());
        for (score, addr) in hits {
            let ids = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("passage")?;
            if let Some(i) = ids.first(addr.doc_id) {
                out.push((usize::try_from(i).unwrap_or(usize::MAX), score));
            }
        }
        Ok(out)
    }

    /// The distinct index terms of `text`, as the passages were indexed.
    pub fn terms(&self, text: &str) -> BTreeSet<String> {
        // An analyzer streams through `&mut self`: each caller works on its own copy.
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut terms = BTreeSet::new();
        while stream.advance() {
            terms.insert(stream.token().text.clone());
        }
        terms
    }

    /// Bytes the index's files take in RAM.
    pub fn size_bytes(&self) -> u64 {
        self.reader
            .searcher()
            .space_usage()
            .map_or(0, |u| u.total().get_bytes())
    }
}

/// Words that carry no topic: Lucene's English stop words plus the pronouns, question words
/// and auxiliaries questions are made of, so "how do I" matches nothing by itself.
const STOP_WORDS: &[&str] = &[
    "a", "about", "again", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being",
    "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for", "from", "had", "has",
    "have", "having", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "me", "might", "must", "my", "no", "not", "of", "on", "or", "our", "shall", "she", "should",
    "so", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "whom", "whose", "why", "will", "with", "would", "you", "your",
];

/// Lower-cased words, stop words out, stemmed (so "refunds" and "refunding" meet "refund").
fn analyzer() -> TextAnalyzer {
    let stop = STOP_WORDS.iter().map(|w| (*w).to_owned());
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(stop))
        .filter(Stemmer::new(Language::English))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_stemmed_and_stop_words_dropped() {
        let (pages, passages) = super::super::pages::load().unwrap();
        let index = SearchIndex::build(&pages, &passages).unwrap();
        let terms: Vec<_> = index.terms("How do I issue refunds?").into_iter().collect();
        assert_eq!(terms, ["issu", "refund"]);
        assert!(index.search("the of and", 5).unwrap().is_empty());
        let hits = index.search("refunds: \"pending\" (AND) OR", 5).unwrap();
        assert!(!hits.is_empty());
        assert_eq!(pages[passages[hits[0].0].page].slug, "orders-and-refunds");
    }
}
