//! Documentation handlers: the question stream and the pages.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;

use super::answer::{self, Source};
use super::model::AskIn;
use super::stream::{Citation, respond};
use super::{Docs, pages::Page};
use crate::error::{AppError, ErrorBody};
use crate::http::extract::{Json, Path};
use crate::http::rate_limit::with_budget;
use crate::http::trace::{ClientAddr, budget_key};
use crate::state::AppState;

const MAX_QUESTION_CHARS: usize = 1000;
const MAX_VISITOR_ID_CHARS: usize = 128;

/// Answers a question about this product from its documentation.
///
/// The answer is a UI message stream (spec 6.5; the AI SDK's protocol `v1`, announced by the
/// `x-vercel-ai-ui-message-stream: v1` header): `text/event-stream` whose `data:` lines are
/// JSON parts `start`, `text-start`, `text-delta` (`id`, `delta`), `text-end`, one
/// `source-url` (`sourceId`, `url`, `title`) per cited page (its `url` is the page at
/// `GET /docs/{slug}`), then `finish`, or `error` (`errorText`) on failure; the last line is
/// `data: [DONE]`. Without a language model the answer is quoted from the best-matching
/// passages; a question nothing matches gets a short "not found" answer and no citation.
///
/// Public. Each visitor may ask 20 questions an hour, counted per `visitor_id`, else per
/// client address, and the server answers at most `--docs-daily-limit` (default 2000) a day
/// in all; past either, 429 `rate_limited` whose `RateLimit-*` headers describe that budget.
/// A client can change its `visitor_id` at will, so the per-visitor count is a courtesy
/// limit: the anonymous budget of its address (every public route's) and the daily total
/// still bound it.
#[utoipa::path(post, path = "/docs/ask", tag = "docs", request_body = AskIn,
    responses((status = 200, description = "The answer as a UI message stream", content_type = "text/event-stream"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)))]
pub async fn ask(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<AskIn>,
) -> Result<Response, AppError> {
    let mut fields = Vec::new();
    let question = input.question.trim();
    if question.is_empty() || input.question.chars().count() > MAX_QUESTION_CHARS {
        fields.push((
            "question",
            format!("1 to {MAX_QUESTION_CHARS} characters, not all blank"),
        ));
    }
    if let Some(v) = &input.visitor_id
        && (v.is_empty() || v.chars().count() > MAX_VISITOR_ID_CHARS)
    {
        fields.push((
            "visitor_id",
            format!("1 to {MAX_VISITOR_ID_CHARS} characters"),
        ));
    }
    if !fields.is_empty() {
        return Err(AppError::validation(fields));
    }
    let visitor = match &input.visitor_id {
        Some(v) => format!("visitor:{v}"),
        None => format!("address:{}", budget_key(addr)),
    };
    let budget = st.limits.check_question(&visitor);
    if let Some(wait) = budget.retry_after_secs {
        return Ok(with_budget(
            AppError::rate_limited(wait).into_response(),
            &budget,
        ));
    }

    let docs: &Docs = &st.docs;
    let found = docs.retrieve(question).map_err(AppError::internal)?;
    let message_id = uuid::Uuid::new_v4().to_string();
    let res = if found.is_empty() {
        let deltas = Box::pin(stream::iter([Ok(answer::NOT_FOUND.to_owned())]));
        respond(message_id, deltas, Vec::new())
    } else {
        let mut citations: Vec<Citation> = Vec::new();
        let mut sources = Vec::with_capacity(found.len());
        for p in found {
            let page = &docs.pages[p.page];
            if !citations.iter().any(|c| c.id == page.slug) {
                citations.push(Citation {
                    id: page.slug.to_owned(),
                    url: format!("{}/v1/docs/{}", st.public_url(), page.slug),
                    title: page.title.clone(),
                });
            }
            sources.push(Source {
                page_title: page.title.clone(),
                heading: p.heading.clone(),
                text: p.text.clone(),
            });
        }
        respond(
            message_id,
            answer::compose(
                docs,
                question,
                &sources,
                st.cfg
                    .assistant
                    .as_ref()
                    .map(|m| (m, &st.assistant.model_slots)),
            ),
            citations,
        )
    };
    Ok(with_budget(res, &budget))
}

/// A documentation page as HTML; `slug` is one of `getting-started`, `sign-in-and-tokens`,
/// `webhooks`, `orders-and-refunds`, `inbox-and-widget`, `assistant`, `backups`. Public.
#[utoipa::path(get, path = "/docs/{slug}", tag = "docs",
    params(("slug" = inline(super::model::DocSlug), Path, description = "The page's name, e.g. `getting-started`")),
    responses((status = 200, description = "The page", content_type = "text/html", body = String),
              (status = 404, body = ErrorBody)))]
pub async fn get_page(
    State(st): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Response, AppError> {
    let docs: &Docs = &st.docs;
    let page = docs
        .page(&slug)
        .ok_or_else(|| AppError::not_found("documentation page"))?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // No script at all; the one stylesheet by its hash.
    let csp = format!(
        "default-src 'none'; style-src 'sha256-{}'; img-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'",
        docs.style_hash
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&csp).map_err(AppError::internal)?,
    );
    Ok((headers, html_page(docs, page)).into_response())
}

/// A whole page: the title, links to every guide, the guide itself.
fn html_page(docs: &Docs, page: &Page) -> String {
    let nav: String = docs
        .pages
        .iter()
        .map(|p| {
            let current = if p.slug == page.slug {
                " aria-current=\"page\""
            } else {
                ""
            };
            // Relative, so the unversioned alias links within itself too.
            format!(
                "<a href=\"{}\"{current}>{}</a>",
                p.slug,
                escape_html(&p.title)
            )
        })
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · merchant-admin documentation</title>\n<style>{}</style>\n</head>\n\
         <body>\n<nav>{nav}</nav>\n<main>\n{}</main>\n</body>\n</html>\n",
        escape_html(&page.title),
        docs.style,
        page.html_body
    )
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
