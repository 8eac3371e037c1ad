//! Storefront pages' writes as functions over the caller's transaction, shared by the
//! handlers (which add the permission check, the event and the audit entry) and
//! `setup --demo`; and the checks and rendering every save goes through.

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{PageOut, PageStatus, Seo};
use super::store::{self, PageRow};
use crate::error::AppError;
use crate::http::extract::text;
use crate::ids::{PageId, StoreId};
use crate::time;

/// Longest `body_markdown`, in bytes (256 KiB).
pub const MAX_BODY: usize = 256 * 1024;
pub const MAX_SLUG: usize = 100;
pub const MAX_TITLE: usize = 255;
pub const MAX_SEO_TITLE: usize = 70;
pub const MAX_SEO_DESCRIPTION: usize = 320;

pub fn not_found() -> AppError {
    AppError::not_found("page")
}

/// Renders markdown to HTML and sanitises it. pulldown-cmark passes raw HTML through, so
/// everything it gives goes through ammonia's allow-list: no `<script>`, `<style>`,
/// `<iframe>` or forms, no `on*` handlers or `style`, and links only to http(s), mailto,
/// tel and relative URLs (never `javascript:` or `data:`); links get `rel="noopener
/// noreferrer nofollow"`.
pub fn render(markdown: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut raw = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut raw, Parser::new_ext(markdown, opts));
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto", "tel"].into())
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&raw)
        .to_string()
}

/// A page's body: the markdown and the sanitised HTML it renders to. Handlers render it
/// before their transaction (off the async threads), so a 256 KiB body never holds the
/// database writer while it renders.
#[derive(Debug, Clone)]
pub struct Body {
    pub markdown: String,
    pub html: String,
}

impl Body {
    pub fn new(markdown: String) -> Self {
        let html = render(&markdown);
        Self { markdown, html }
    }
}

/// A slug as given: 1 to 100 of `[a-z0-9-]`, else 422.
pub fn check_slug(v: &str) -> Result<String, AppError> {
    let ok = !v.is_empty()
        && v.len() <= MAX_SLUG
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(v.to_owned())
    } else {
        Err(AppError::field(
            "slug",
            "must be 1 to 100 lowercase letters, digits and hyphens",
        ))
    }
}

/// The slug a title gives (Shopify's handle), cut to leave room for a `-N` suffix.
fn slug_of(title: &str) -> String {
    // The crate directly: the shared helper falls back to "store" for an empty result.
    let s = slug::slugify(title);
    let mut s: String = s.chars().take(MAX_SLUG - 6).collect();
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() { "page".into() } else { s }
}

pub fn check_title(v: &str) -> Result<String, AppError> {
    text("title", v, 1, MAX_TITLE)
}

pub fn check_body(v: &str) -> Result<String, AppError> {
    if v.len() > MAX_BODY {
        return Err(AppError::field(
            "body_markdown",
            "must be at most 262144 bytes (256 KiB)",
        ));
    }
    Ok(v.to_owned())
}

/// Trimmed SEO fields within their bounds; an empty one is null.
pub fn check_seo(seo: Option<Seo>) -> Result<Seo, AppError> {
    let seo = seo.unwrap_or_default();
    let field = |name: &str, v: Option<String>, max: usize| match v
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        None => Ok(None),
        Some(s) => text(name, s, 1, max).map(Some),
    };
    Ok(Seo {
        title: field("seo.title", seo.title, MAX_SEO_TITLE)?,
        description: field("seo.description", seo.description, MAX_SEO_DESCRIPTION)?,
    })
}

/// A new page's checked content.
#[derive(Debug, Clone)]
pub struct NewPage {
    pub title: String,
    /// None: derived from the title.
    pub slug: Option<String>,
    pub body: Body,
    pub status: PageStatus,
    pub seo: Seo,
}

/// Creates a page at version 1.
pub fn create(
    tx: &Tx<'_>,
    store: StoreId,
    p: NewPage,
    now: DateTime<Utc>,
) -> Result<PageOut, AppError> {
    let slug = match p.slug {
        Some(s) => s,
        None => crate::catalog::store::free_slug(tx, "pages", store, &slug_of(&p.title))?,
    };
    let published = p.status == PageStatus::Published;
    let row = PageRow {
        slug,
        title: p.title,
        body_markdown: p.body.markdown,
        body_html: p.body.html,
        status: p.status,
        published_at: published.then(|| time::format(now)),
        seo: p.seo,
        version: 1,
    };
    let id = PageId::new();
    store::insert(tx, store, id, &row, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// A checked change; `None` keeps a field.
#[derive(Debug, Clone, Default)]
pub struct PageChange {
    pub title: Option<String>,
    pub slug: Option<String>,
    pub body: Option<Body>,
    pub status: Option<PageStatus>,
    pub seo: Option<Seo>,
}

/// Applies `change`. A save that changes the content (slug, title, body or seo) keeps the
/// content it replaces as a version and bumps `version`; a status-only change does not.
/// Publishing sets `published_at` the first time; a draft again keeps it but is hidden.
pub fn update(
    tx: &Tx<'_>,
    store: StoreId,
    id: PageId,
    change: PageChange,
    now: DateTime<Utc>,
) -> Result<PageOut, AppError> {
    let old = store::get(tx, store, id)?.ok_or_else(not_found)?;
    let title = change.title.unwrap_or_else(|| old.title.clone());
    let slug = change.slug.unwrap_or_else(|| old.slug.clone());
    let seo = change.seo.unwrap_or_else(|| old.seo.clone());
    let status = change.status.unwrap_or(old.status);
    let (body_markdown, body_html) = match change.body {
        Some(b) if b.markdown != old.body_markdown => (b.markdown, b.html),
        _ => (old.body_markdown.clone(), old.body_html.clone()),
    };
    let content_changed = title != old.title
        || slug != old.slug
        || seo != old.seo
        || body_markdown != old.body_markdown;
    if content_changed {
        store::keep_version(tx, &old)?;
    }
    let published_at = match (&old.published_at, status) {
        (None, PageStatus::Published) => Some(time::format(now)),
        (at, _) => at.clone(),
    };
    let row = PageRow {
        slug,
        title,
        body_markdown,
        body_html,
        status,
        published_at,
        seo,
        version: old.version + i32::from(content_changed),
    };
    store::update(tx, store, id, &row, now)?;
    store::get(tx, store, id)?.ok_or_else(not_found)
}

/// Saves a kept version's content into the page as a new save (which keeps the content it
/// replaces as a version in turn). The page's current version restores as it is; a version
/// the page does not keep is 404.
///
/// `body` is the version's markdown rendered beforehand, off the writer (see
/// [`Body::new`]); a version's content never changes, so it is still that version's.
pub fn restore(
    tx: &Tx<'_>,
    store: StoreId,
    id: PageId,
    version: i32,
    body: Body,
    now: DateTime<Utc>,
) -> Result<PageOut, AppError> {
    let page = store::get(tx, store, id)?.ok_or_else(not_found)?;
    if version == page.version {
        return Ok(page);
    }
    let v =
        store::get_version(tx, id, version)?.ok_or_else(|| AppError::not_found("page version"))?;
    debug_assert_eq!(v.body_markdown, body.markdown);
    let change = PageChange {
        title: Some(v.title),
        slug: Some(v.slug),
        body: Some(body),
        status: None,
        seo: Some(v.seo),
    };
    update(tx, store, id, change, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_checked_and_derived() {
        assert!(check_slug("about-us-2").is_ok());
        for bad in ["", "About", "a b", "a_b", "ção", &"a".repeat(101)] {
            assert!(check_slug(bad).is_err(), "{bad}");
        }
        assert_eq!(slug_of("Sobre nós!"), "sobre-nos");
        assert_eq!(slug_of("!!!"), "page");
        assert!(slug_of(&"palavra ".repeat(40)).len() <= MAX_SLUG - 6);
    }

    #[test]
    fn rendering_keeps_markup_and_drops_what_runs() {
        let html = render("# Hi\n\n*ok* [x](https://example.com)");
        assert!(html.contains("<h1>Hi</h1>") && html.contains("<em>ok</em>"));
        assert!(html.contains(r#"href="https://example.com""#));
        let hostile = render(
            "<script>alert(1)</script><img src=x onerror=alert(1)>\n\n\
             [a](javascript:alert(1)) <a href=\"JaVaScRiPt:alert(1)\">b</a>",
        );
        let lower = hostile.to_ascii_lowercase();
        for bad in ["<script", "onerror", "javascript:"] {
            assert!(!lower.contains(bad), "{bad} in {hostile}");
        }
    }
}
