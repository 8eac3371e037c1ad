-- Store API tokens (spec 2.5, 4.2; issue 4). Only the sha256 of a value is kept; last4 is
-- what the list shows. A token acts for the user who issued it, within one store: if that
-- user leaves the store, the token stops resolving.
CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    created_by   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,          -- JSON array of permission codes, or ["*"]
    token_hash   BLOB NOT NULL UNIQUE,
    last4        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,                   -- written at most once a minute
    expires_at   TEXT
);
CREATE INDEX api_tokens_by_store ON api_tokens (store_id, created_at, id);
