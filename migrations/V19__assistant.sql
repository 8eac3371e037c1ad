-- The assistant (issue 16, spec 4.3, 6.5). A conversation belongs to one user in one store:
-- nobody else lists, reads or continues it.
CREATE TABLE assistant_conversations (
    id TEXT PRIMARY KEY,
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX assistant_conversations_by_owner
    ON assistant_conversations (store_id, user_id, created_at DESC, id DESC);

-- The transcript, lossless: what the model was sent and said, in order. `seq` orders it
-- (ids and times can tie within a turn). A tool message answers the assistant message's
-- tool call `tool_call_id`; `content` is the tool's JSON result.
CREATE TABLE assistant_messages (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES assistant_conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    -- 'decision': the user approved or declined a proposal (sent to the model as a system note).
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'decision')),
    content TEXT NOT NULL DEFAULT '',
    -- JSON array of {id, name, arguments} on an assistant message that called tools.
    tool_calls TEXT,
    tool_call_id TEXT,
    tool_name TEXT,
    -- 'stopped' or 'error' when the turn ended before the model finished this message.
    ended TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (conversation_id, seq)
);

-- A write the model asked for, waiting for the user's decision (spec 3). Deleted with its
-- conversation; what was applied lives on in assistant_actions.
CREATE TABLE assistant_proposals (
    id TEXT PRIMARY KEY,
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES assistant_conversations (id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    summary TEXT NOT NULL,
    risk TEXT NOT NULL CHECK (risk IN ('none', 'destructive', 'money', 'external')),
    -- 'applying' is held while an approval runs the write, so two approvals cannot both run it.
    -- 'interrupted': the server stopped while applying a write that records its action only
    -- after it (a refund, a reply): it may have gone out.
    status TEXT NOT NULL CHECK (status IN ('pending', 'applying', 'applied', 'declined', 'failed',
                                           'interrupted')),
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX assistant_proposals_by_conversation ON assistant_proposals (conversation_id, created_at);

-- An applied write, undoable where `undo` says how (JSON; NULL: not undoable). Kept when its
-- conversation is deleted (no foreign key to it).
CREATE TABLE assistant_actions (
    id TEXT PRIMARY KEY,
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    proposal_id TEXT NOT NULL UNIQUE,
    conversation_id TEXT,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    summary TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    undo TEXT,
    undone_at TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX assistant_actions_by_owner
    ON assistant_actions (store_id, user_id, created_at DESC, id DESC);

-- Messages sent to the assistant per store and calendar month (UTC), for the monthly cap.
CREATE TABLE assistant_usage (
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    period TEXT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (store_id, period)
);

-- A phone a user verified to talk to the assistant over the store's messaging-app channel.
-- The code is kept as a keyed hash, valid 5 minutes, burned after 5 wrong tries.
CREATE TABLE assistant_phones (
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    phone_e164 TEXT NOT NULL,
    code_hash BLOB,
    code_expires_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    verified_at TEXT,
    -- Codes sent in the hour from send_window_start (at most 5).
    send_window_start TEXT,
    sends INTEGER NOT NULL DEFAULT 0,
    -- The assistant conversation its messages continue.
    conversation_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (store_id, user_id)
);
-- A verified number speaks for one user of the store.
CREATE UNIQUE INDEX assistant_phones_verified
    ON assistant_phones (store_id, phone_e164) WHERE verified_at IS NOT NULL;

-- Messaging-app message ids already taken by the assistant: a repeated delivery runs no
-- second turn.
CREATE TABLE assistant_phone_inbound (
    provider_message_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
