-- Carts (issue 19): the storefront's shopping carts and their recovery, and storefront
-- orders.
--
-- A cart belongs to a store; a shopper reaches it through a chat channel's public key (the
-- storefront API reuses the widget's key, its enabled flag and its allowed origins), so the
-- cart remembers the channel it was opened on: its recovery link names that key.
CREATE TABLE carts (
    id              TEXT PRIMARY KEY,
    store_id        TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    channel_id      TEXT REFERENCES channels (id) ON DELETE SET NULL,
    -- The inbox conversation an assisted sale attached the cart to (issue 19, phase B).
    conversation_id TEXT REFERENCES conversations (id) ON DELETE SET NULL,
    -- sha256 of the shopper's cart token; the token itself is shown once and never stored.
    -- NULL for a cart no shopper holds a token to (one the team made in the inbox).
    token_hash      BLOB,
    -- open -> abandoned (the recovery job) -> recovered (checked out after that);
    -- open -> converted (checked out). Checked-out carts no longer change.
    status          TEXT NOT NULL DEFAULT 'open'
                    CHECK (status IN ('open', 'abandoned', 'recovered', 'converted')),
    email           TEXT,
    phone           TEXT,
    currency        TEXT NOT NULL,
    -- The order the checkout made (no foreign key: the cart keeps naming it).
    order_id        TEXT,
    created_at      TEXT NOT NULL,
    -- Moved by every change the shopper (or the team) makes: what abandonment counts from.
    updated_at      TEXT NOT NULL,
    abandoned_at    TEXT,
    checked_out_at  TEXT
);
CREATE INDEX carts_by_created ON carts (store_id, created_at, id);
CREATE INDEX carts_by_status ON carts (store_id, status, created_at, id);
-- The recovery job's scan: open carts with a contact, oldest change first.
CREATE INDEX carts_to_abandon ON carts (updated_at)
    WHERE status = 'open' AND (email IS NOT NULL OR phone IS NOT NULL);
-- The cleanup's stale carts.
CREATE INDEX carts_stale ON carts (updated_at) WHERE status IN ('open', 'abandoned');
-- A conversation's cart (the assisted sale).
CREATE INDEX carts_by_conversation ON carts (conversation_id) WHERE conversation_id IS NOT NULL;

-- A cart's lines: a variant once, in the order first added. Prices are not copied: a cart
-- shows the catalog's current price until the checkout copies it into the order.
CREATE TABLE cart_items (
    cart_id    TEXT NOT NULL REFERENCES carts (id) ON DELETE CASCADE,
    -- ON DELETE CASCADE: a variant removed from the catalog leaves the carts it was in.
    variant_id TEXT NOT NULL REFERENCES variants (id) ON DELETE CASCADE,
    quantity   INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 10000),
    position   INTEGER NOT NULL,
    PRIMARY KEY (cart_id, variant_id)
) WITHOUT ROWID;
CREATE INDEX cart_items_by_variant ON cart_items (variant_id);

-- Storefront orders: `orders.source` admits 'storefront'. SQLite cannot change a CHECK, so
-- the table is rebuilt; payments and refunds reference it with ON DELETE CASCADE, and with
-- foreign keys on (they cannot be turned off inside the migration's transaction) dropping
-- `orders` under them would delete their rows, so all three are copied aside, dropped
-- children first, recreated as they were and filled back.
CREATE TEMP TABLE orders_v25 AS SELECT * FROM orders;
CREATE TEMP TABLE payments_v25 AS SELECT * FROM payments;
CREATE TEMP TABLE refunds_v25 AS SELECT * FROM refunds;
DROP TABLE refunds;
DROP TABLE payments;
DROP TABLE orders;

CREATE TABLE orders (
    id             TEXT PRIMARY KEY,
    store_id       TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- per-store sequence, from 1001 (what merchants know from Shopify)
    number         INTEGER NOT NULL,
    -- no foreign key: an order keeps naming its buyer after the customer record is deleted
    customer_id    TEXT,
    -- 'api' (POST /orders), 'manual' (POST /orders/manual) or 'storefront' (a cart's
    -- checkout, issue 19)
    source         TEXT NOT NULL CHECK (source IN ('api', 'manual', 'storefront')),
    -- JSON array of the lines as sold; lines never change after creation
    items          TEXT NOT NULL,
    subtotal_cents INTEGER NOT NULL CHECK (subtotal_cents >= 0),
    shipping_cents INTEGER NOT NULL CHECK (shipping_cents >= 0),
    discount_cents INTEGER NOT NULL CHECK (discount_cents >= 0),
    total_cents    INTEGER NOT NULL CHECK (total_cents >= 0),
    refunded_cents INTEGER NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0 AND refunded_cents <= total_cents),
    currency       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'fulfilled', 'shipped',
                       'delivered', 'cancelled', 'partially_refunded', 'refunded')),
    note           TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    -- The order as the API shows it (JSON), rewritten by every change in the same
    -- transaction, so a list page is rows copied out rather than rebuilt.
    rendered       TEXT NOT NULL,
    UNIQUE (store_id, number)
);

CREATE TABLE payments (
    id             TEXT PRIMARY KEY,
    store_id       TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    order_id       TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    -- which provider holds the money: 'manual' (recorded by hand) or 'http'
    provider       TEXT NOT NULL CHECK (provider IN ('manual', 'http')),
    amount_cents   INTEGER NOT NULL CHECK (amount_cents >= 0),
    refunded_cents INTEGER NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0 AND refunded_cents <= amount_cents),
    status         TEXT NOT NULL CHECK (status IN ('approved')),
    created_at     TEXT NOT NULL
);

-- As V14 and V18 left it (columns in the same order, so the copy goes back by position).
CREATE TABLE refunds (
    id               TEXT PRIMARY KEY,
    store_id         TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    order_id         TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    payment_id       TEXT NOT NULL REFERENCES payments (id) ON DELETE CASCADE,
    amount_cents     INTEGER NOT NULL CHECK (amount_cents >= 1),
    reason           TEXT,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    -- the client's Idempotency-Key (or the refund's id when it sent none): a retry finds its
    -- refund by it
    client_key       TEXT NOT NULL,
    -- the Idempotency-Key the provider is sent, kept so every ask of this refund sends the
    -- same one (an HMAC of store, payment and client key for refunds made from V14 on)
    provider_key     TEXT NOT NULL,
    -- while set and in the future, one ask of the provider is in flight: no second one starts
    asking_until     TEXT,
    -- who asked for it, for the audit entry of a refund the background check settles
    actor_user_id    TEXT,
    actor_token_name TEXT,
    trace_id         TEXT,
    created_at       TEXT NOT NULL,
    actor_via        TEXT,
    UNIQUE (order_id, client_key),
    UNIQUE (payment_id, provider_key)
);

INSERT INTO orders SELECT * FROM temp.orders_v25;
INSERT INTO payments SELECT * FROM temp.payments_v25;
INSERT INTO refunds SELECT * FROM temp.refunds_v25;
DROP TABLE temp.orders_v25;
DROP TABLE temp.payments_v25;
DROP TABLE temp.refunds_v25;

CREATE INDEX orders_by_created ON orders (store_id, created_at, id);
CREATE INDEX orders_by_status ON orders (store_id, status, created_at, id);
CREATE INDEX orders_by_customer ON orders (store_id, customer_id, created_at, id);
-- The cart sweep's unpaid storefront orders, whose stock it frees after the hold.
CREATE INDEX orders_unpaid_storefront ON orders (created_at)
    WHERE source = 'storefront' AND status = 'pending';
CREATE INDEX payments_by_order ON payments (order_id, created_at);
CREATE INDEX refunds_by_payment ON refunds (payment_id, status);
CREATE INDEX refunds_by_order ON refunds (order_id, created_at);
