-- Customers (issue 6). orders_count and total_spent_cents are kept by the orders area.
CREATE TABLE customers (
    id                TEXT PRIMARY KEY,
    store_id          TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    -- stored trimmed and lowercased; NULL when the customer has none (a messaging-app buyer)
    email             TEXT COLLATE NOCASE,
    phone             TEXT,
    addresses         TEXT NOT NULL DEFAULT '[]',   -- JSON array of address objects
    accepts_marketing INTEGER NOT NULL DEFAULT 0,
    orders_count      INTEGER NOT NULL DEFAULT 0,
    total_spent_cents INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (store_id, email)
);
CREATE INDEX customers_by_created ON customers (store_id, created_at, id);
