//! Documentation questions (issue 16; spec 4.4, 5 rule 9, 6.5, 8): `POST /docs/ask` answers a
//! question from the product's own guides as a UI message stream citing the pages it used,
//! and `GET /docs/{slug}` serves each guide as HTML. Both are public.
//!
//! Invariants:
//! - The guides are embedded from `assets/docs/` (rust-embed); the binary needs nothing on
//!   disk. They are split into passages and indexed (tantivy, BM25, in RAM) once, in
//!   `AppState::open`, before the server accepts a request; the index is never written again.
//! - The stream always ends `finish` or `error`, then `data: [DONE]`; a `source-url` is sent
//!   per cited page, and its URL is the absolute address of `GET /docs/{slug}`. An answer
//!   with no matching passage cites nothing.
//! - How the answer is written is one seam (`answer::compose`): the language model's answer
//!   from the passages when one is configured (`--assistant-provider`), else extractive,
//!   quoted from them.
//! - Questions are charged after validation: 20 an hour per visitor (its `visitor_id`, else
//!   its client address) and a daily total across everyone (`--docs-daily-limit`), on top of
//!   the anonymous budget every public route has. A refusal is 429 `rate_limited` whose
//!   `RateLimit-*` headers describe the budget that refused.

pub mod answer;
mod handlers;
pub mod model;
pub mod pages;
pub mod search;
pub mod stream;

use std::time::Instant;

use base64::Engine;
use sha2::{Digest, Sha256};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use self::pages::{Page, Passage};
use self::search::SearchIndex;
use crate::state::AppState;

/// Passages retrieval looks at for one question.
const CANDIDATES: usize = 5;
/// Passages an answer is built from, at most.
const MAX_SOURCES: usize = 3;
/// A candidate scoring under this share of the best one is about something else.
const RELATIVE_CUTOFF: f32 = 0.5;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::ask))
        .routes(routes!(handlers::get_page))
}

/// The guides, their passages and the index over them.
pub struct Docs {
    pub pages: Vec<Page>,
    pub passages: Vec<Passage>,
    pub index: SearchIndex,
    /// The page stylesheet and the CSP hash that admits it.
    style: &'static str,
    style_hash: String,
}

impl Docs {
    /// Loads and indexes the guides, and logs what that cost: the time, the index's bytes in
    /// RAM, the passages' text kept for quoting, and how much the process's resident memory
    /// grew meanwhile (Linux; it includes the indexing buffers tantivy freed again).
    /// Blocking (a few milliseconds); call it off the runtime.
    pub fn load() -> anyhow::Result<Self> {
        let rss_before = resident_bytes();
        let started = Instant::now();
        let (pages, passages) = pages::load()?;
        let index = SearchIndex::build(&pages, &passages)
            .map_err(|e| anyhow::anyhow!("indexing the documentation: {e}"))?;
        let style = include_str!("page.css");
        let style_hash =
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
        tracing::info!(
            pages = pages.len(),
            passages = passages.len(),
            build_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            index_bytes = index.size_bytes(),
            passage_bytes = passages
                .iter()
                .map(|p| p.text.len() + p.heading.len())
                .sum::<usize>(),
            rss_growth_bytes = resident_bytes().saturating_sub(rss_before),
            "documentation index built"
        );
        Ok(Self {
            pages,
            passages,
            index,
            style,
            style_hash,
        })
    }

    pub fn page(&self, slug: &str) -> Option<&Page> {
        self.pages.iter().find(|p| p.slug == slug)
    }

    /// The passages to answer `question` from, best first: the best match and those close
    /// to it, at most [`MAX_SOURCES`]. Empty when nothing matches.
    pub fn retrieve(&self, question: &str) -> anyhow::Result<Vec<&Passage>> {
        let hits = self
            .index
            .search(question, CANDIDATES)
            .map_err(|e| anyhow::anyhow!("searching the documentation: {e}"))?;
        let best = hits.first().map_or(0.0, |h| h.1);
        Ok(hits
            .into_iter()
            .filter(|(_, score)| *score >= best * RELATIVE_CUTOFF)
            .filter_map(|(i, _)| self.passages.get(i))
            .take(MAX_SOURCES)
            .collect())
    }
}

/// The process's resident set, from `/proc/self/statm` (pages of 4 KiB); 0 where there is
/// none.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}
