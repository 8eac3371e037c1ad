-- The storefront's products kept rendered (issue 19): one row per active product, its JSON
-- as shoppers see it (availability as a yes or no per variant, never a count), rewritten in
-- the transaction of every write that changes it (`storefront::store::refresh`), so a
-- storefront list page is rows copied out in one keyset query.
--
-- WITHOUT ROWID with the list order as its key: a page is one walk of one b-tree, with no
-- seek from an index to the row for each product (the admin lists pay that seek). A row is
-- about 600 bytes for a product with two variants; longer ones spill to overflow pages, as
-- they would in a rowid table. Only `id`'s foreign key cascades: a deleted product (or
-- store, through its products) leaves the list with it.
CREATE TABLE storefront_products (
    store_id   TEXT NOT NULL,
    -- the product's, which never changes: the list is newest first
    created_at TEXT NOT NULL,
    id         TEXT NOT NULL UNIQUE REFERENCES products (id) ON DELETE CASCADE,
    rendered   TEXT NOT NULL,
    PRIMARY KEY (store_id, created_at, id)
) WITHOUT ROWID;

-- Products whose storefront row is still to be written. SQL cannot render the JSON the way
-- the server does (it is the writer's Rust code), so this migration queues every active
-- product and the server renders them when it opens the database, before it serves; the
-- queue is empty the rest of the time.
CREATE TABLE storefront_pending (
    product_id TEXT PRIMARY KEY
) WITHOUT ROWID;

INSERT INTO storefront_pending (product_id) SELECT id FROM products WHERE status = 'active';
