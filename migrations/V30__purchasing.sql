-- Purchasing (issue 20 "Purchasing"): suppliers and the purchase orders that bring stock in.

CREATE TABLE suppliers (
    id           TEXT PRIMARY KEY,
    store_id     TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    email        TEXT,
    phone        TEXT,
    contact_name TEXT,
    notes        TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
-- The list's keyset order, newest first.
CREATE INDEX suppliers_by_created ON suppliers (store_id, created_at, id);

CREATE TABLE purchase_orders (
    id          TEXT PRIMARY KEY,
    store_id    TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- per-store sequence from 1001, as orders number theirs
    number      INTEGER NOT NULL,
    -- No action (not RESTRICT): a deleted store cascades to both tables in one statement,
    -- and the check runs when that statement ends. The API refuses to delete a supplier
    -- that still has purchase orders (409) before this would fire.
    supplier_id TEXT NOT NULL REFERENCES suppliers (id),
    status      TEXT NOT NULL CHECK (status IN ('draft', 'ordered', 'partially_received',
                    'received', 'cancelled')),
    expected_at TEXT,
    note        TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (store_id, number)
);
CREATE INDEX purchase_orders_by_created ON purchase_orders (store_id, created_at, id);
CREATE INDEX purchase_orders_by_supplier ON purchase_orders (supplier_id);

-- One line per variant. No foreign key to variants: a line keeps naming what was bought
-- after the variant is deleted (receiving into it is then refused).
CREATE TABLE purchase_order_items (
    purchase_order_id TEXT NOT NULL REFERENCES purchase_orders (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,
    variant_id        TEXT NOT NULL,
    quantity          INTEGER NOT NULL CHECK (quantity > 0),
    unit_cost_cents   INTEGER NOT NULL CHECK (unit_cost_cents >= 0),
    received_quantity INTEGER NOT NULL DEFAULT 0
                      CHECK (received_quantity >= 0 AND received_quantity <= quantity),
    PRIMARY KEY (purchase_order_id, variant_id)
) WITHOUT ROWID;
