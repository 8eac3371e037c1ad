-- Foundation schema (issue 2).
-- Conventions: ids are UUID text; time is `*_at TEXT` in one fixed-width RFC 3339 UTC format
-- (2026-01-01T00:00:00.000000Z), so string order is time order; money is `*_cents INTEGER`.

-- Keys the server generates for itself on first start (cursor signing, ...). randomblob()
-- runs once, inside this migration, so every later start reads the same keys.
CREATE TABLE server_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
);
INSERT INTO server_keys (name, key) VALUES ('cursor', randomblob(32));

-- Minimal identity and tenancy, enough for `setup`; the identity and organization issues
-- extend these tables.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    -- stored trimmed and lowercased; NOCASE as a second guard for the unique index
    email         TEXT NOT NULL COLLATE NOCASE UNIQUE,
    password_hash TEXT NOT NULL,            -- argon2id PHC string
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE tenant_members (
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
CREATE INDEX tenant_members_user ON tenant_members (user_id);

CREATE TABLE stores (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (tenant_id, slug)
);

CREATE TABLE store_members (
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'staff', 'viewer')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (store_id, user_id)
);
CREATE INDEX store_members_user ON store_members (user_id);

-- Idempotency records (spec 8), one per (credential scope, key). `status` is NULL while the
-- first request runs; that start marker is what answers concurrent duplicates with 409.
CREATE TABLE idempotency_keys (
    scope            TEXT NOT NULL,     -- 'cred:<credential id>' or 'anon:<client address>'
    key              TEXT NOT NULL,
    request_hash     BLOB NOT NULL,     -- sha256 of method, path and body
    lock_token       TEXT NOT NULL,     -- which request owns the start marker
    status           INTEGER,
    response_headers TEXT,              -- JSON array of [name, value]
    response_body    BLOB,
    created_at       TEXT NOT NULL,
    expires_at       TEXT NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- The durable job queue. Domain code inserts in the same transaction as the write that
-- causes the job (outbox). Workers claim with a lease; a lease that runs out (the process
-- died) makes the job claimable again.
CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,       -- JSON of the job's data
    state        TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'dead')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    run_at       TEXT NOT NULL,       -- not before this time
    lease_until  TEXT,                -- set while running
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
-- The two ways a job becomes claimable, each with its own small partial index.
CREATE INDEX jobs_queued ON jobs (run_at) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE state IN ('done', 'dead');
