-- Invoices and the subscription's lifecycle (issue 17, spec 2.12, 3). An invoice bills one
-- plan for one period; an open one is paid by Pix, its `txid` naming it in the payment.
CREATE TABLE invoices (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Sequential over the server (the operator is the one seller): number = 'INV-' || seq.
    seq INTEGER NOT NULL UNIQUE,
    number TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('open', 'paid', 'void')),
    -- Stripe's billing_reason: subscription_create (the first after a trial),
    -- subscription_cycle (a renewal), subscription_update (an upgrade's proration),
    -- subscription_resume (reactivating a canceled subscription).
    reason TEXT NOT NULL,
    plan_code TEXT NOT NULL,
    billing_cycle TEXT NOT NULL CHECK (billing_cycle IN ('monthly', 'annual')),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL DEFAULT 'BRL',
    period_start TEXT NOT NULL,
    period_end TEXT NOT NULL,
    due_at TEXT NOT NULL,
    txid TEXT NOT NULL UNIQUE,
    paid_at TEXT,
    paid_amount_cents INTEGER,
    -- 'pix_webhook' or 'manual' (billing mark-paid).
    paid_via TEXT,
    voided_at TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX invoices_by_tenant ON invoices (tenant_id, created_at, id);
CREATE INDEX invoices_open ON invoices (tenant_id, due_at) WHERE status = 'open';

-- What the daily job and payments need to move a subscription: a change waiting for the
-- period's end (a downgrade, a new cycle), and when it fell behind.
ALTER TABLE subscriptions ADD COLUMN pending_plan_code TEXT;
ALTER TABLE subscriptions ADD COLUMN pending_billing_cycle TEXT
    CHECK (pending_billing_cycle IN ('monthly', 'annual'));
ALTER TABLE subscriptions ADD COLUMN past_due_since TEXT;
ALTER TABLE subscriptions ADD COLUMN suspended_at TEXT;
ALTER TABLE subscriptions ADD COLUMN canceled_at TEXT;
-- Where periods are counted from (Stripe's billing cycle anchor): a period ending on the 31st
-- ends on the last day of a short month and on the 31st again after it.
ALTER TABLE subscriptions ADD COLUMN billing_anchor TEXT;

-- Signed Pix payments the webhook could not apply (an unknown txid, a voided invoice, less
-- than the amount): the money has arrived, so it is kept for the operator to reconcile
-- (`merchant-admin billing unapplied`). A provider's repeated delivery is kept once.
CREATE TABLE pix_unapplied (
    id INTEGER PRIMARY KEY,
    txid TEXT NOT NULL,
    invoice_number TEXT,
    reason TEXT NOT NULL CHECK (reason IN ('unknown_txid', 'invoice_void', 'amount_short')),
    amount_cents INTEGER NOT NULL,
    paid_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    UNIQUE (txid, amount_cents, paid_at)
);
