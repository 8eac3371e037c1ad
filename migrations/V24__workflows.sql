-- Workflows (issue 18; spec 2.10, 4.7). The draft (`graph`, `trigger`) is what saving edits;
-- `published_graph`/`published_trigger` are the live copy, written only by publish. Graphs and
-- triggers are JSON, validated by the workflows area before they are stored.

CREATE TABLE workflows (
    id                TEXT PRIMARY KEY,
    store_id          TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- no foreign key: a workflow keeps naming its author after they leave
    created_by        TEXT NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    kind              TEXT NOT NULL CHECK (kind IN ('journey')),
    status            TEXT NOT NULL CHECK (status IN ('draft', 'published', 'paused')),
    -- the latest published version; 0 until the first publish
    version           INTEGER NOT NULL DEFAULT 0,
    graph             TEXT NOT NULL,
    trigger           TEXT NOT NULL,
    published_graph   TEXT,
    published_trigger TEXT,
    published_at      TEXT,
    last_run_at       TEXT,
    -- set only while published with a schedule trigger: the runner's due scan reads it
    next_fire_at      TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
-- The list, newest first, keyset-paged on (created_at, id).
CREATE INDEX workflows_by_created ON workflows (store_id, created_at, id);
-- The runner's "what is due" scan, across stores.
CREATE INDEX workflows_due ON workflows (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- Every published version, as it was published. Rows are never changed (the trigger below);
-- they go only with their workflow.
CREATE TABLE workflow_versions (
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    store_id     TEXT NOT NULL,
    version      INTEGER NOT NULL CHECK (version >= 1),
    graph        TEXT NOT NULL,
    trigger      TEXT NOT NULL,
    published_at TEXT NOT NULL,
    published_by TEXT NOT NULL,
    PRIMARY KEY (workflow_id, version)
) WITHOUT ROWID;

CREATE TRIGGER workflow_versions_are_immutable BEFORE UPDATE ON workflow_versions BEGIN
    SELECT RAISE(ABORT, 'workflow versions are immutable');
END;
