-- Identity (issue 3): accounts, sessions, rotating refresh tokens, sign-in failures, and the
-- event outbox that `user.created` goes to (delivered by the webhooks issue).

ALTER TABLE users ADD COLUMN locale TEXT NOT NULL DEFAULT 'pt-BR'
    CHECK (locale IN ('pt-BR', 'en-US'));
ALTER TABLE users ADD COLUMN disabled_at TEXT;

-- A signed-in device. Ending it (logout, revoke, password change, deactivation, refresh
-- token reuse) sets revoked_at; every token of the session dies with it.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    device_name   TEXT NOT NULL,
    address       TEXT,
    created_at    TEXT NOT NULL,
    last_used_at  TEXT NOT NULL,        -- written at most once a minute
    revoked_at    TEXT,
    revoke_reason TEXT
);
-- The device list: a user's live sessions, most recently used first.
CREATE INDEX sessions_by_use ON sessions (user_id, last_used_at DESC, id DESC)
    WHERE revoked_at IS NULL;

-- One access token and one refresh token are issued together as a pair. Only sha256 hashes
-- of the secrets are stored.
CREATE TABLE token_pairs (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    access_hash      BLOB NOT NULL UNIQUE,
    refresh_hash     BLOB NOT NULL UNIQUE,
    created_at       TEXT NOT NULL,
    access_expires_at  TEXT NOT NULL,
    refresh_expires_at TEXT NOT NULL,
    access_used_at   TEXT,      -- first request made with the access token
    refresh_used_at  TEXT,      -- when the refresh token was presented (rotated)
    replaced_by      TEXT,      -- the pair issued for that refresh
    retired_at       TEXT       -- a pair the client never received (refresh retry)
);
CREATE INDEX token_pairs_session ON token_pairs (session_id);

-- Failed sign-ins, for the lockout of 10 per 15 minutes per e-mail and per address.
CREATE TABLE sign_in_failures (
    id      INTEGER PRIMARY KEY,
    email   TEXT NOT NULL,
    address TEXT NOT NULL,
    at      TEXT NOT NULL
);
CREATE INDEX sign_in_failures_email ON sign_in_failures (email, at);
CREATE INDEX sign_in_failures_address ON sign_in_failures (address, at);

-- The event outbox: recorded in the same transaction as the change it describes.
-- store_id is NULL for platform events such as user.created.
CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    store_id   TEXT,
    name       TEXT NOT NULL,
    payload    TEXT NOT NULL,        -- JSON `data` of the envelope
    created_at TEXT NOT NULL
);
CREATE INDEX events_by_store ON events (store_id, created_at);
