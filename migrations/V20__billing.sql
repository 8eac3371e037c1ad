-- Subscriptions (issue 17, spec 2.12, 3): one per organization. `plan_code` NULL means the
-- catalog's default plan (organizations made before billing existed; the catalog is the
-- operator's file, not the database's).
CREATE TABLE subscriptions (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    plan_code TEXT,
    billing_cycle TEXT NOT NULL CHECK (billing_cycle IN ('monthly', 'annual')),
    status TEXT NOT NULL CHECK (status IN ('trialing', 'active', 'past_due', 'suspended', 'canceled')),
    trial_ends_at TEXT,
    current_period_start TEXT NOT NULL,
    current_period_end TEXT NOT NULL,
    cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Organizations that exist already start their 14-day trial now (times in the app's
-- RFC 3339 form, microseconds and Z).
INSERT INTO subscriptions (tenant_id, plan_code, billing_cycle, status, trial_ends_at,
                           current_period_start, current_period_end, created_at, updated_at)
SELECT id, plan_code, 'monthly', 'trialing',
       strftime('%Y-%m-%dT%H:%M:%f', 'now', '+14 days') || '000Z',
       strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z',
       strftime('%Y-%m-%dT%H:%M:%f', 'now', '+14 days') || '000Z',
       strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z',
       strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'
FROM tenants;
