-- Analytics (issue 20 "Analytics"): counters kept in the transaction of every write they count,
-- so a summary sums at most 96 rows a day instead of scanning the store's orders.
--
-- Buckets are UTC quarter hours (Unix seconds of their start, a multiple of 900): every time
-- zone's offset is a multiple of 15 minutes, so any store-local day is a whole run of them.
-- What counts (README "Analytics"): an order once it has a payment, in the bucket of its
-- created_at, for its total; a succeeded refund in the bucket of its own created_at; a
-- customer in the bucket of its created_at (a deleted customer is taken out again).
CREATE TABLE analytics_buckets (
    store_id      TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    bucket        INTEGER NOT NULL,
    orders        INTEGER NOT NULL DEFAULT 0,
    revenue_cents INTEGER NOT NULL DEFAULT 0,
    refunds_cents INTEGER NOT NULL DEFAULT 0,
    new_customers INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (store_id, bucket)
) WITHOUT ROWID;

-- Units and line revenue per product of the counted orders, twice: per UTC quarter hour
-- (span 900) for the ragged ends of a store-local range, and per UTC day (span 86400) for
-- its whole days, so a range reads at most two days of quarter hours plus a row per product
-- and day. `title` is the title as last sold (the product may have been deleted since).
CREATE TABLE analytics_product_buckets (
    store_id      TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    span          INTEGER NOT NULL CHECK (span IN (900, 86400)),
    bucket        INTEGER NOT NULL,
    product_id    TEXT NOT NULL,
    title         TEXT NOT NULL,
    quantity      INTEGER NOT NULL DEFAULT 0,
    revenue_cents INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (store_id, span, bucket, product_id)
) WITHOUT ROWID;

-- Backfill from the rows that exist (the same definitions as analytics::store's writes).
INSERT INTO analytics_buckets (store_id, bucket, orders, revenue_cents)
    SELECT o.store_id, (unixepoch(o.created_at) / 900) * 900, COUNT(*), SUM(o.total_cents)
    FROM orders o
    WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)
    GROUP BY 1, 2;

INSERT INTO analytics_buckets (store_id, bucket, refunds_cents)
    SELECT r.store_id, (unixepoch(r.created_at) / 900) * 900, SUM(r.amount_cents)
    FROM refunds r
    WHERE r.status = 'succeeded'
    GROUP BY 1, 2
    ON CONFLICT (store_id, bucket) DO UPDATE SET refunds_cents = excluded.refunds_cents;

INSERT INTO analytics_buckets (store_id, bucket, new_customers)
    SELECT c.store_id, (unixepoch(c.created_at) / 900) * 900, COUNT(*)
    FROM customers c
    WHERE true
    GROUP BY 1, 2
    ON CONFLICT (store_id, bucket) DO UPDATE SET new_customers = excluded.new_customers;

INSERT INTO analytics_product_buckets (store_id, span, bucket, product_id, title, quantity,
                                       revenue_cents)
    SELECT o.store_id, s.span, (unixepoch(o.created_at) / s.span) * s.span,
           json_extract(i.value, '$.product_id'), MAX(json_extract(i.value, '$.title')),
           SUM(json_extract(i.value, '$.quantity')), SUM(json_extract(i.value, '$.total_cents'))
    FROM orders o
    JOIN json_each(o.items) i
    JOIN (SELECT 900 AS span UNION ALL SELECT 86400) s
    WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)
    GROUP BY o.store_id, s.span, 3, 4;
