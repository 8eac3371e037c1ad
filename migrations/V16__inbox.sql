-- The shared inbox (issue 15): channels, conversations, their messages and notes, message
-- attachments, and the single-use tickets of the agent socket.

CREATE TABLE channels (
    id              TEXT PRIMARY KEY,
    store_id        TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('storefront_chat', 'msgapp', 'email')),
    name            TEXT NOT NULL,
    -- The public key a chat widget names the channel by; NULL for other kinds.
    key             TEXT UNIQUE,
    enabled         INTEGER NOT NULL DEFAULT 1,
    allowed_origins TEXT NOT NULL DEFAULT '[]',   -- JSON array of origins (chat)
    -- Settings that may be shown (phone_number_id, address), as a JSON object.
    settings        TEXT NOT NULL DEFAULT '{}',
    -- Settings that must stay secret (app_secret, verify_token, inbound_secret): a JSON
    -- object sealed with secrets.key, the channel id as associated data. Never returned.
    secrets         BLOB,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX channels_by_store ON channels (store_id, created_at, id);

CREATE TABLE conversations (
    id                      TEXT PRIMARY KEY,
    store_id                TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    channel_id              TEXT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    channel_kind            TEXT NOT NULL,
    status                  TEXT NOT NULL DEFAULT 'open'
                            CHECK (status IN ('open', 'pending', 'resolved', 'snoozed')),
    priority                TEXT NOT NULL DEFAULT 'none'
                            CHECK (priority IN ('none', 'low', 'medium', 'high', 'urgent')),
    -- 0 none .. 4 urgent, so `sort=priority` is an index seek.
    priority_rank           INTEGER NOT NULL DEFAULT 0,
    assignee_user_id        TEXT REFERENCES users (id) ON DELETE SET NULL,
    labels                  TEXT NOT NULL DEFAULT '[]',
    bot_active              INTEGER NOT NULL DEFAULT 0,
    unread_for_agents       INTEGER NOT NULL DEFAULT 0,
    unread_for_visitor      INTEGER NOT NULL DEFAULT 0,
    contact_name            TEXT,
    contact_email           TEXT COLLATE NOCASE,
    contact_phone           TEXT,
    -- The contact's name, e-mail and phone in one lowercased line, for `search`.
    contact_search          TEXT NOT NULL DEFAULT '',
    customer_id             TEXT REFERENCES customers (id) ON DELETE SET NULL,
    -- sha256 of the widget visitor's token (storefront chat only).
    visitor_token_hash      BLOB,
    last_message_at         TEXT,
    -- When the oldest visitor message still without a team answer arrived; NULL once answered.
    waiting_since           TEXT,
    reply_window_expires_at TEXT,
    snoozed_until           TEXT,
    -- The order of newest activity: last_message_at, else created_at.
    activity_at             TEXT NOT NULL,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL
);
CREATE INDEX conversations_by_activity ON conversations (store_id, activity_at, id);
CREATE INDEX conversations_by_status ON conversations (store_id, status, activity_at, id);
-- `sort=oldest_waiting`: waiting conversations oldest first, the rest after them.
CREATE INDEX conversations_by_waiting
    ON conversations (store_id, COALESCE(waiting_since, '9999'), id);
CREATE INDEX conversations_by_priority ON conversations (store_id, priority_rank, activity_at, id);
CREATE INDEX conversations_by_assignee ON conversations (store_id, assignee_user_id, activity_at, id);
CREATE INDEX conversations_by_channel ON conversations (channel_id, contact_phone);

-- Messages in the order they were committed: `seq` is assigned by the single writer, so a
-- client that has seen message N has seen every message before it (the catch-up recipe).
CREATE TABLE messages (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    store_id        TEXT NOT NULL,
    sender          TEXT NOT NULL CHECK (sender IN ('visitor', 'agent', 'bot', 'system')),
    agent_user_id   TEXT REFERENCES users (id) ON DELETE SET NULL,
    text            TEXT NOT NULL,
    payload         TEXT NOT NULL DEFAULT '{}',
    external_id     TEXT,
    delivery_status TEXT NOT NULL DEFAULT 'sent'
                    CHECK (delivery_status IN ('sent', 'delivered', 'read', 'failed')),
    delivery_error  TEXT,
    read_at         TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
CREATE UNIQUE INDEX messages_by_external ON messages (conversation_id, external_id)
    WHERE external_id IS NOT NULL;

CREATE TABLE conversation_notes (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    store_id        TEXT NOT NULL,
    author_user_id  TEXT REFERENCES users (id) ON DELETE SET NULL,
    text            TEXT NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX notes_by_conversation ON conversation_notes (conversation_id, created_at, id);

-- A message's files, kept in the database so a backup carries them.
CREATE TABLE message_attachments (
    message_id  TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    name        TEXT,
    mime_type   TEXT NOT NULL,
    size        INTEGER,
    data        BLOB NOT NULL,
    PRIMARY KEY (message_id, idx)
);

-- Single-use tickets for /ws/conversations (60 s), by the sha256 of their value.
CREATE TABLE ws_tickets (
    ticket_hash BLOB PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    store_id    TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- What minted it, re-checked for as long as the socket stays open: 'session:<id>' or
    -- 'api_token:<id>'.
    credential  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT
);
