-- Second factors (issue 3): TOTP, the messaging-app factor, recovery codes, and the sign-in
-- challenges that a password step hands out when a factor is on.

-- Key for HMAC-hashing secrets too short to be safe under a bare hash (six-digit codes) and
-- for idempotency fingerprints (bodies that may hold passwords).
INSERT INTO server_keys (name, key) VALUES ('hmac', randomblob(32));

-- The TOTP secret is never returned once enabled; the pending one is what setup shows
-- until enable confirms it. totp_last_step blocks replaying an accepted code in its window.
ALTER TABLE users ADD COLUMN totp_secret TEXT;
ALTER TABLE users ADD COLUMN totp_pending_secret TEXT;
ALTER TABLE users ADD COLUMN totp_last_step INTEGER;
-- The confirmed phone (E.164) of the messaging-app factor.
ALTER TABLE users ADD COLUMN msgapp_phone TEXT;

CREATE TABLE recovery_codes (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  BLOB NOT NULL,
    created_at TEXT NOT NULL,
    used_at    TEXT
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id);

-- A password step that still needs a second factor: single use, 300 s, 5 verify attempts
-- in total whatever the method.
CREATE TABLE sign_in_challenges (
    id             TEXT PRIMARY KEY,
    challenge_hash BLOB NOT NULL UNIQUE,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    device_name    TEXT NOT NULL,
    address        TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    used_at        TEXT
);

-- Codes sent over the messaging app: for a sign-in challenge (purpose 'sign_in') or to
-- confirm a phone (purpose 'enable'). Only the newest per owner is pending; 5 wrong
-- attempts burn it. A code the provider did not take is kept as 'undelivered' so it still
-- counts against the send limits. code_hash is an HMAC with the 'hmac' server key.
CREATE TABLE one_time_codes (
    id           TEXT PRIMARY KEY,
    purpose      TEXT NOT NULL CHECK (purpose IN ('sign_in', 'enable')),
    challenge_id TEXT REFERENCES sign_in_challenges (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    phone        TEXT NOT NULL,
    code_hash    BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    state        TEXT NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'used', 'burned', 'replaced', 'undelivered'))
);
CREATE INDEX one_time_codes_challenge ON one_time_codes (challenge_id, created_at);
CREATE INDEX one_time_codes_user ON one_time_codes (user_id, purpose, created_at);

-- What the `log` messaging-app provider "sent", for `merchant-admin dev outbox`.
CREATE TABLE outbound_messages (
    id         TEXT PRIMARY KEY,
    channel    TEXT NOT NULL,
    recipient  TEXT NOT NULL,
    template   TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX outbound_messages_recent ON outbound_messages (created_at);
