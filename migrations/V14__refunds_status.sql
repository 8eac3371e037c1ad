-- Refunds that settle once and survive uncertain answers (issue 13, items 6-8).
--
-- A refund is 'pending' while its outcome is unknown (the amount stays held), 'succeeded' once
-- the provider confirmed it and 'failed' once the provider definitely refused it (the hold is
-- released). SQLite cannot change a CHECK, so the table is rebuilt.
CREATE TABLE refunds_v14 (
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
    UNIQUE (order_id, client_key),
    UNIQUE (payment_id, provider_key)
);
-- Refunds made before V14 sent the client's key itself: it stays their provider key.
INSERT INTO refunds_v14 (id, store_id, order_id, payment_id, amount_cents, reason, status,
                         client_key, provider_key, created_at)
    SELECT id, store_id, order_id, payment_id, amount_cents, reason, status,
           provider_key, provider_key, created_at
    FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_v14 RENAME TO refunds;
CREATE INDEX refunds_by_payment ON refunds (payment_id, status);
CREATE INDEX refunds_by_order ON refunds (order_id, created_at);

-- A refund left pending by a process that stopped mid-way is asked about again by the
-- background check, as every new refund is (jobs::Job::RefundCheck).
INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, created_at,
                  updated_at, queue, lane)
    SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-8'
                 || substr(h, 18, 3) || '-' || substr(h, 21, 12)),
           'refund_check',
           json_object('kind', 'refund_check', 'data', json_object('refund_id', rid)),
           'queued', 0, 31, now, now, now, 'default', NULL
    FROM (SELECT id AS rid, hex(randomblob(16)) AS h,
                 strftime('%Y-%m-%dT%H:%M:%S.000000Z', 'now') AS now
          FROM refunds WHERE status = 'pending');
