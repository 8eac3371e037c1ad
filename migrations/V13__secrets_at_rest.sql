-- Secrets at rest (issue 13).
-- Responses that carry a secret (a new API token, webhook signing secret or invite link) are
-- kept for replay like any other, but their body sealed with secrets.key (as webhook
-- secrets are); response_sealed says which bodies are. The 24 h expiry and the cleanup job
-- delete them like the rest.
ALTER TABLE idempotency_keys ADD COLUMN response_sealed INTEGER NOT NULL DEFAULT 0;

-- Not done in SQL (it needs the key files): TOTP secrets are sealed, the server_keys rows
-- move to hmac.key, and secret-bearing outbound messages are blanked; see state.rs
-- `prepare_at_rest`, run on every start right after the migrations.
