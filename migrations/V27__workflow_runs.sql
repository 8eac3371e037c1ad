-- Workflow runs (issue 18): one row per start of a published workflow, following the version
-- it started on. Each step is a `workflow_step` job; the row says where the run is.

CREATE TABLE workflow_runs (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    -- the version published when the run started; it follows that graph to its end
    version      INTEGER NOT NULL CHECK (version >= 1),
    status       TEXT NOT NULL CHECK (status IN ('running', 'waiting', 'completed', 'failed')),
    subject_type TEXT CHECK (subject_type IN ('order', 'customer')),
    subject_id   TEXT,
    -- the store event that started it: a workflow starts once per event
    event_id     TEXT,
    -- how it started: manual, schedule or event
    started_by   TEXT NOT NULL CHECK (started_by IN ('manual', 'schedule', 'event')),
    current_node TEXT,
    -- steps taken: a run is stopped past the runner's cap (a loop that never ends)
    steps        INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    updated_at   TEXT NOT NULL,
    UNIQUE (workflow_id, event_id)
);
-- The runs list, newest first, keyset-paged on (started_at, id).
CREATE INDEX workflow_runs_by_started ON workflow_runs (workflow_id, started_at, id);
-- The hourly sweep's runs in flight, and the cleanup's finished runs.
CREATE INDEX workflow_runs_in_flight ON workflow_runs (status) WHERE finished_at IS NULL;
CREATE INDEX workflow_runs_finished ON workflow_runs (finished_at) WHERE finished_at IS NOT NULL;

-- Which store event a published workflow waits for, read from its live trigger, so that
-- recording an event finds the workflows it starts with one index lookup.
ALTER TABLE workflows ADD COLUMN trigger_event TEXT
    GENERATED ALWAYS AS (json_extract(published_trigger, '$.event')) VIRTUAL;
CREATE INDEX workflows_by_trigger_event ON workflows (store_id, trigger_event)
    WHERE trigger_event IS NOT NULL;

-- Customer tags (the `tag_customer` step; Shopify's customer tags): a JSON array of strings.
ALTER TABLE customers ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
