-- The audit trail (issue 4): every write made in a store or an organization, with who made
-- it (the user, and the token's name when a store API token was used), what, on which
-- resource, and the trace id of the request. Organization-level writes have no store.
CREATE TABLE audit_log (
    id            TEXT PRIMARY KEY,
    store_id      TEXT REFERENCES stores (id) ON DELETE CASCADE,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    actor_user_id TEXT NOT NULL,
    token_name    TEXT,
    action        TEXT NOT NULL,          -- e.g. store.updated, api_token.created
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    trace_id      TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX audit_log_by_store ON audit_log (store_id, created_at, id);
CREATE INDEX audit_log_by_tenant ON audit_log (tenant_id, created_at, id);
