-- Orders, their payments and refunds, and the stock adjustment log (issue 6).

CREATE TABLE orders (
    id             TEXT PRIMARY KEY,
    store_id       TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- per-store sequence, from 1001 (what merchants know from Shopify)
    number         INTEGER NOT NULL,
    -- no foreign key: an order keeps naming its buyer after the customer record is deleted
    customer_id    TEXT,
    -- 'api' (POST /orders) or 'manual' (POST /orders/manual)
    source         TEXT NOT NULL CHECK (source IN ('api', 'manual')),
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
CREATE INDEX orders_by_created ON orders (store_id, created_at, id);
CREATE INDEX orders_by_status ON orders (store_id, status, created_at, id);
CREATE INDEX orders_by_customer ON orders (store_id, customer_id, created_at, id);

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
CREATE INDEX payments_by_order ON payments (order_id, created_at);

-- A refund is written 'pending' before the provider is called, so two refunds at once
-- cannot both spend the same balance; it becomes 'succeeded' when the provider confirms
-- and is deleted when the provider refuses.
CREATE TABLE refunds (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    order_id     TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    payment_id   TEXT NOT NULL REFERENCES payments (id) ON DELETE CASCADE,
    amount_cents INTEGER NOT NULL CHECK (amount_cents >= 1),
    reason       TEXT,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'succeeded')),
    -- the Idempotency-Key the provider was sent: a retry after an unanswered attempt reuses
    -- its pending refund instead of holding the amount twice
    provider_key TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (payment_id, provider_key)
);
CREATE INDEX refunds_by_payment ON refunds (payment_id, status);
CREATE INDEX refunds_by_order ON refunds (order_id, created_at);

CREATE TABLE stock_adjustments (
    id         TEXT PRIMARY KEY,
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    variant_id TEXT NOT NULL REFERENCES variants (id) ON DELETE CASCADE,
    delta      INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    on_hand    INTEGER NOT NULL,   -- after the adjustment
    created_at TEXT NOT NULL
);
CREATE INDEX stock_adjustments_by_variant ON stock_adjustments (variant_id, created_at);

-- The inventory list's product filter, in its order (by SKU).
CREATE INDEX variants_by_store_product ON variants (store_id, product_id, sku, id);
