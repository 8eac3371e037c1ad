-- Notifications (issue 20 "Notifications"): a member's in-app feed per store, the copies
-- sent by e-mail or messaging app, and each member's preferences.

-- One row per (member, kind) the member changed; a kind without a row has the defaults
-- (in_app on, e-mail and messaging app off). Global across stores: a person picks how they
-- want to hear about a kind once, as GitHub's and Shopify's account settings do.
CREATE TABLE notification_preferences (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    in_app     INTEGER NOT NULL CHECK (in_app IN (0, 1)),
    email      INTEGER NOT NULL CHECK (email IN (0, 1)),
    msgapp     INTEGER NOT NULL CHECK (msgapp IN (0, 1)),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, kind)
);

-- One row per recipient. `in_app = 0` rows exist only to carry an out-of-app copy's text
-- (the member turned the feed off for the kind but kept e-mail): the feed never shows them.
CREATE TABLE notifications (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    in_app       INTEGER NOT NULL CHECK (in_app IN (0, 1)),
    read_at      TEXT,
    created_at   TEXT NOT NULL
);
-- The feed, newest first, and its unread filter (also the unread count).
CREATE INDEX notifications_feed
    ON notifications (store_id, user_id, created_at DESC, id DESC) WHERE in_app = 1;
CREATE INDEX notifications_unread
    ON notifications (store_id, user_id, created_at DESC, id DESC)
    WHERE in_app = 1 AND read_at IS NULL;
-- The retention purge.
CREATE INDEX notifications_created ON notifications (created_at);

-- An out-of-app copy: its job sends it and records the outcome here. `error_code` is
-- `notification_send_failed` with the provider's answer in `error` while it retries, and
-- stays with `status = 'failed'` after the last attempt.
CREATE TABLE notification_deliveries (
    id              TEXT PRIMARY KEY,
    notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    channel         TEXT NOT NULL CHECK (channel IN ('email', 'msgapp')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    error_code      TEXT,
    error           TEXT,
    sent_at         TEXT,
    updated_at      TEXT NOT NULL,
    UNIQUE (notification_id, channel)
);
