-- Webhooks (issue 5): subscriptions, the stored envelope of each event, every delivery
-- attempt, and job queues so deliveries never wait behind (or block) other jobs.

-- A job belongs to a queue ('default' for the generic workers, 'webhooks' for the delivery
-- dispatcher) and optionally a lane (the webhook it delivers to), which the dispatcher uses
-- to cap requests in flight per receiver.
ALTER TABLE jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE jobs ADD COLUMN lane TEXT;
DROP INDEX jobs_queued;
DROP INDEX jobs_leased;
CREATE INDEX jobs_queued ON jobs (queue, lane, run_at) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (queue, lease_until) WHERE state = 'running';

-- The JSON envelope {event, store_id, timestamp, data}, built once when the event is
-- recorded so every retry sends the same bytes. NULL for events recorded before V8.
ALTER TABLE events ADD COLUMN body TEXT;

CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY,
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    -- The signing secret, sealed with the key in <data-dir>/secrets.key (nonce || ciphertext):
    -- it must be read back to sign, so it is encrypted rather than hashed.
    secret     BLOB NOT NULL,
    is_active  INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX webhooks_by_store ON webhooks (store_id, created_at, id);

CREATE TABLE webhook_subscriptions (
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    store_id   TEXT NOT NULL,    -- copied from the webhook: the fan-out is one index lookup
    event      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (webhook_id, event)
) WITHOUT ROWID;
CREATE INDEX webhook_subscriptions_by_event ON webhook_subscriptions (store_id, event);

-- One row per attempt. webhook_id is NULL for the operator's platform webhook.
CREATE TABLE webhook_attempts (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    event           TEXT NOT NULL,   -- the event's name, kept with the attempt
    attempt         INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    response_status INTEGER,
    response_body   TEXT,
    duration_ms     INTEGER NOT NULL,
    error           TEXT,
    created_at      TEXT NOT NULL,
    next_attempt_at TEXT
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, created_at, id);
CREATE INDEX webhook_attempts_by_event ON webhook_attempts (webhook_id, event_id, attempt);
