-- Reviews (issue 6; spec 2.9, 4.6).

CREATE TABLE reviews (
    id                   TEXT PRIMARY KEY,
    store_id             TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    product_id           TEXT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    -- no foreign keys: a review keeps naming its buyer and order after they are deleted
    customer_id          TEXT,
    order_id             TEXT,
    author_name          TEXT NOT NULL,
    author_email         TEXT NOT NULL,
    title                TEXT NOT NULL,
    body                 TEXT NOT NULL,
    rating               INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    status               TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    is_verified_purchase INTEGER NOT NULL DEFAULT 0,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    -- The review as the API shows it (JSON, with its product's slug and title), kept current
    -- by the writes below and the products trigger, so a list page is rows copied out.
    rendered             TEXT NOT NULL
);
CREATE INDEX reviews_by_created ON reviews (store_id, created_at, id);
CREATE INDEX reviews_by_status ON reviews (store_id, status, created_at, id);
CREATE INDEX reviews_by_product ON reviews (store_id, product_id, created_at, id);
CREATE INDEX reviews_by_product_status ON reviews (store_id, product_id, status, created_at, id);

-- Reviews per store and status, so the pending badge (`include_total=true`) is one row read
-- rather than a count over every pending review.
CREATE TABLE review_counts (
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    status   TEXT NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (store_id, status)
) WITHOUT ROWID;

-- Triggers keep the counts and each product's approved-review rating in step with every
-- write, including deletes that cascade from a product.
CREATE TRIGGER reviews_counted_in AFTER INSERT ON reviews BEGIN
    INSERT INTO review_counts (store_id, status, n) VALUES (NEW.store_id, NEW.status, 1)
        ON CONFLICT (store_id, status) DO UPDATE SET n = n + 1;
    UPDATE products SET rating_sum = rating_sum + NEW.rating, rating_count = rating_count + 1
        WHERE id = NEW.product_id AND NEW.status = 'approved';
END;

CREATE TRIGGER reviews_counted_out AFTER DELETE ON reviews BEGIN
    UPDATE review_counts SET n = n - 1 WHERE store_id = OLD.store_id AND status = OLD.status;
    UPDATE products SET rating_sum = rating_sum - OLD.rating, rating_count = rating_count - 1
        WHERE id = OLD.product_id AND OLD.status = 'approved';
END;

CREATE TRIGGER reviews_recounted AFTER UPDATE OF status, rating ON reviews BEGIN
    UPDATE review_counts SET n = n - 1 WHERE store_id = OLD.store_id AND status = OLD.status;
    INSERT INTO review_counts (store_id, status, n) VALUES (NEW.store_id, NEW.status, 1)
        ON CONFLICT (store_id, status) DO UPDATE SET n = n + 1;
    UPDATE products SET rating_sum = rating_sum - OLD.rating, rating_count = rating_count - 1
        WHERE id = OLD.product_id AND OLD.status = 'approved';
    UPDATE products SET rating_sum = rating_sum + NEW.rating, rating_count = rating_count + 1
        WHERE id = NEW.product_id AND NEW.status = 'approved';
END;

-- A product's new title or slug reaches the stored bodies of its reviews.
CREATE TRIGGER reviews_follow_their_product AFTER UPDATE OF title, slug ON products
WHEN OLD.title IS NOT NEW.title OR OLD.slug IS NOT NEW.slug BEGIN
    UPDATE reviews SET rendered = json_set(rendered, '$.product_slug', NEW.slug,
                                                     '$.product_title', NEW.title)
        WHERE product_id = NEW.id;
END;
