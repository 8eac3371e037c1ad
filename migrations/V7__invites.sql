-- Store invites (issue 4): a single-use link valid for 7 days. Only the sha256 of the
-- token is stored.
CREATE TABLE invites (
    id          TEXT PRIMARY KEY,
    store_id    TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'staff', 'viewer')),
    token_hash  BLOB NOT NULL UNIQUE,
    invited_by  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT
);
CREATE INDEX invites_by_store ON invites (store_id, created_at);
