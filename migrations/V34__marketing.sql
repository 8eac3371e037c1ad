-- Marketing e-mail (issue 20 "Marketing e-mail"): saved customer segments, campaigns sent to
-- a segment, and each campaign's recipients as frozen when sending started.

CREATE TABLE segments (
    id         TEXT PRIMARY KEY,
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    -- JSON object of the checked filter (tags_any, total_spent_*, last_order_*, accepts_marketing)
    filter     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- The list's keyset order, newest first.
CREATE INDEX segments_by_created ON segments (store_id, created_at, id);

CREATE TABLE campaigns (
    id            TEXT PRIMARY KEY,
    store_id      TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    subject       TEXT NOT NULL,
    body_markdown TEXT NOT NULL,
    -- No action (not RESTRICT), as purchase orders name suppliers: a deleted store cascades
    -- to both tables in one statement. The API refuses to delete a segment a campaign names.
    segment_id    TEXT NOT NULL REFERENCES segments (id),
    status        TEXT NOT NULL CHECK (status IN ('draft', 'scheduled', 'sending', 'sent',
                      'cancelled')),
    scheduled_at  TEXT,
    sent_at       TEXT,
    -- Counters kept in the transaction that freezes or settles each recipient, so a list
    -- of campaigns does not count recipient rows.
    recipients    INTEGER NOT NULL DEFAULT 0,
    sent          INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX campaigns_by_created ON campaigns (store_id, created_at, id);
CREATE INDEX campaigns_by_status ON campaigns (store_id, status, created_at, id);
CREATE INDEX campaigns_by_segment ON campaigns (segment_id);

-- One row per recipient, written in the transaction that starts sending. `position` numbers
-- them from 0; a batch job owns a range of positions. No foreign key to customers: the
-- record of what was sent stays after a customer is deleted.
CREATE TABLE campaign_recipients (
    campaign_id TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    customer_id TEXT NOT NULL,
    email       TEXT NOT NULL,
    name        TEXT,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    error_code  TEXT,
    error       TEXT,
    sent_at     TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (campaign_id, position),
    UNIQUE (campaign_id, customer_id)
) WITHOUT ROWID;
-- The recipients list's status filter, and a batch's pending recipients in order.
CREATE INDEX campaign_recipients_by_status ON campaign_recipients (campaign_id, status, position);
