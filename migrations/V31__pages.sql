-- Storefront pages (issue 20 "Storefront pages (CMS)"): a store's content pages (About,
-- Shipping policy...) written in markdown, kept rendered and sanitised, with the last 20
-- earlier versions of each.

CREATE TABLE pages (
    id              TEXT PRIMARY KEY,
    store_id        TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    slug            TEXT NOT NULL,
    title           TEXT NOT NULL,
    body_markdown   TEXT NOT NULL,
    -- rendered from body_markdown and sanitised when saved; never built per request
    body_html       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('draft', 'published')),
    -- the first time the page was published; kept while it is a draft again
    published_at    TEXT,
    seo_title       TEXT,
    seo_description TEXT,
    -- 1 on create, +1 on each save that changes the content (slug, title, body, seo)
    version         INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
-- A slug names one page of the store: concurrent creates cannot both take it (409).
CREATE UNIQUE INDEX pages_by_slug ON pages (store_id, slug);
-- The admin list's keyset order, newest first; with `status` for the filter and for the
-- storefront's published-only list.
CREATE INDEX pages_by_created ON pages (store_id, created_at, id);
CREATE INDEX pages_by_status ON pages (store_id, status, created_at, id);

-- A page's earlier contents, one row per version it had before a save replaced it; the
-- last 20 are kept (pruned in the save's transaction).
CREATE TABLE page_versions (
    page_id         TEXT NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    version         INTEGER NOT NULL,
    slug            TEXT NOT NULL,
    title           TEXT NOT NULL,
    body_markdown   TEXT NOT NULL,
    seo_title       TEXT,
    seo_description TEXT,
    -- when this content was saved (the page's updated_at then)
    saved_at        TEXT NOT NULL,
    PRIMARY KEY (page_id, version)
) WITHOUT ROWID;
