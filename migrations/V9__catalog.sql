-- Catalog (issue 6): categories (a tree), products with their variants, and each variant's
-- stock, kept on the variant row so an order's reservation is one conditional UPDATE.

CREATE TABLE categories (
    id         TEXT PRIMARY KEY,
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    parent_id  TEXT REFERENCES categories (id) ON DELETE SET NULL,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (store_id, slug)
);
CREATE INDEX categories_by_store ON categories (store_id, name, id);
CREATE INDEX categories_by_parent ON categories (parent_id);

CREATE TABLE products (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    slug         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
    tags         TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings
    -- Approved reviews only (the reviews area keeps these up to date).
    rating_sum   INTEGER NOT NULL DEFAULT 0,
    rating_count INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (store_id, slug)
);
-- One index per list order; status filters ride along.
CREATE INDEX products_by_created ON products (store_id, created_at, id);
CREATE INDEX products_by_updated ON products (store_id, updated_at, id);
CREATE INDEX products_by_title ON products (store_id, title, id);
CREATE INDEX products_by_status ON products (store_id, status, created_at, id);

CREATE TABLE product_categories (
    product_id  TEXT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    category_id TEXT NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
    PRIMARY KEY (product_id, category_id)
) WITHOUT ROWID;
CREATE INDEX product_categories_by_category ON product_categories (category_id, product_id);

CREATE TABLE variants (
    id                     TEXT PRIMARY KEY,
    store_id               TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    product_id             TEXT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    position               INTEGER NOT NULL,
    sku                    TEXT NOT NULL,
    title                  TEXT NOT NULL,
    price_cents            INTEGER NOT NULL CHECK (price_cents >= 0),
    compare_at_price_cents INTEGER CHECK (compare_at_price_cents >= 0),
    weight_grams           INTEGER CHECK (weight_grams >= 0),
    -- Stock: available = on_hand - reserved, never below zero.
    on_hand                INTEGER NOT NULL DEFAULT 0 CHECK (on_hand >= 0),
    reserved               INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0 AND reserved <= on_hand),
    low_stock_threshold    INTEGER NOT NULL DEFAULT 5 CHECK (low_stock_threshold >= 0),
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL,
    UNIQUE (store_id, sku)
);
CREATE INDEX variants_by_product ON variants (product_id, position);
