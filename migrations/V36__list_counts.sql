-- Issue 22: `include_total=true` costs what the page costs. Lists with no filter, or filtered by
-- one enum or one foreign key, read their total from this table: one row per store, list and
-- filter value (`key` is '' for the whole list, 'status:<value>', 'customer_id:<id>',
-- 'product_id:<id>'). Other filters keep a capped COUNT (src/db/counts.rs).
--
-- Triggers keep the rows, so every write that changes a list's membership counts in its own
-- transaction, whichever path makes it (API, import, checkout, demo seeder, purge, a cascade
-- from a deleted product or store). A migration that rebuilds one of these tables must
-- recreate its triggers. Rows at 0 stay: a later write reuses them.
CREATE TABLE list_counts (
    store_id TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    list     TEXT NOT NULL,
    key      TEXT NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (store_id, list, key)
) WITHOUT ROWID;

-- ---- orders: all, by status, by customer

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'orders', '', COUNT(*) FROM orders GROUP BY store_id;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'orders', 'status:' || status, COUNT(*) FROM orders GROUP BY store_id, status;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'orders', 'customer_id:' || customer_id, COUNT(*) FROM orders
    WHERE customer_id IS NOT NULL GROUP BY store_id, customer_id;

CREATE TRIGGER orders_counted_in AFTER INSERT ON orders BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'orders', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status
              UNION ALL SELECT 'customer_id:' || NEW.customer_id)
        WHERE k IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER orders_counted_out AFTER DELETE ON orders BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'orders'
          AND key IN ('', 'status:' || OLD.status, 'customer_id:' || OLD.customer_id);
END;

CREATE TRIGGER orders_recounted AFTER UPDATE OF status, customer_id ON orders
WHEN OLD.status IS NOT NEW.status OR OLD.customer_id IS NOT NEW.customer_id BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'orders'
          AND key IN ('status:' || OLD.status, 'customer_id:' || OLD.customer_id);
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'orders', k, 1
        FROM (SELECT 'status:' || NEW.status AS k
              UNION ALL SELECT 'customer_id:' || NEW.customer_id)
        WHERE k IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

-- ---- reviews: all, by status, by product (folds in V12's review_counts; the product rating
-- the V12 triggers kept is kept here the same way)

DROP TRIGGER reviews_counted_in;
DROP TRIGGER reviews_counted_out;
DROP TRIGGER reviews_recounted;
DROP TABLE review_counts;

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'reviews', '', COUNT(*) FROM reviews GROUP BY store_id;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'reviews', 'status:' || status, COUNT(*) FROM reviews
    GROUP BY store_id, status;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'reviews', 'product_id:' || product_id, COUNT(*) FROM reviews
    GROUP BY store_id, product_id;

CREATE TRIGGER reviews_counted_in AFTER INSERT ON reviews BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'reviews', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status
              UNION ALL SELECT 'product_id:' || NEW.product_id)
        WHERE k IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
    UPDATE products SET rating_sum = rating_sum + NEW.rating, rating_count = rating_count + 1
        WHERE id = NEW.product_id AND NEW.status = 'approved';
END;

CREATE TRIGGER reviews_counted_out AFTER DELETE ON reviews BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'reviews'
          AND key IN ('', 'status:' || OLD.status, 'product_id:' || OLD.product_id);
    UPDATE products SET rating_sum = rating_sum - OLD.rating, rating_count = rating_count - 1
        WHERE id = OLD.product_id AND OLD.status = 'approved';
END;

CREATE TRIGGER reviews_recounted AFTER UPDATE OF status, rating ON reviews BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'reviews' AND key = 'status:' || OLD.status;
    INSERT INTO list_counts (store_id, list, key, n)
        VALUES (NEW.store_id, 'reviews', 'status:' || NEW.status, 1)
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
    UPDATE products SET rating_sum = rating_sum - OLD.rating, rating_count = rating_count - 1
        WHERE id = OLD.product_id AND OLD.status = 'approved';
    UPDATE products SET rating_sum = rating_sum + NEW.rating, rating_count = rating_count + 1
        WHERE id = NEW.product_id AND NEW.status = 'approved';
END;

-- ---- customers: all (`search` is free text: a capped count)

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'customers', '', COUNT(*) FROM customers GROUP BY store_id;

CREATE TRIGGER customers_counted_in AFTER INSERT ON customers BEGIN
    INSERT INTO list_counts (store_id, list, key, n) VALUES (NEW.store_id, 'customers', '', 1)
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER customers_counted_out AFTER DELETE ON customers BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'customers' AND key = '';
END;

-- ---- carts: all, by status

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'carts', '', COUNT(*) FROM carts GROUP BY store_id;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'carts', 'status:' || status, COUNT(*) FROM carts GROUP BY store_id, status;

CREATE TRIGGER carts_counted_in AFTER INSERT ON carts BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'carts', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status)
        WHERE k IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER carts_counted_out AFTER DELETE ON carts BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'carts' AND key IN ('', 'status:' || OLD.status);
END;

CREATE TRIGGER carts_recounted AFTER UPDATE OF status ON carts
WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'carts' AND key = 'status:' || OLD.status;
    INSERT INTO list_counts (store_id, list, key, n)
        VALUES (NEW.store_id, 'carts', 'status:' || NEW.status, 1)
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

-- ---- products: all, by status (category, search and their combinations: a capped count)

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'products', '', COUNT(*) FROM products GROUP BY store_id;
INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'products', 'status:' || status, COUNT(*) FROM products
    GROUP BY store_id, status;

CREATE TRIGGER products_counted_in AFTER INSERT ON products BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'products', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status)
        WHERE k IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER products_counted_out AFTER DELETE ON products BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'products'
          AND key IN ('', 'status:' || OLD.status);
END;

CREATE TRIGGER products_recounted AFTER UPDATE OF status ON products
WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'products' AND key = 'status:' || OLD.status;
    INSERT INTO list_counts (store_id, list, key, n)
        VALUES (NEW.store_id, 'products', 'status:' || NEW.status, 1)
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

-- ---- conversations (the inbox): those with a message, all and by status, channel kind,
-- priority and assignee ('assignee_user_id:' for unassigned). A change moves the row's old
-- keys down and its new keys up; a key it keeps nets zero. Messages that only move
-- `last_message_at` along do not fire it.

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'conversations', k, COUNT(*)
    FROM (SELECT store_id, '' AS k FROM conversations WHERE last_message_at IS NOT NULL
          UNION ALL SELECT store_id, 'status:' || status FROM conversations
              WHERE last_message_at IS NOT NULL
          UNION ALL SELECT store_id, 'channel_kind:' || channel_kind FROM conversations
              WHERE last_message_at IS NOT NULL
          UNION ALL SELECT store_id, 'priority:' || priority FROM conversations
              WHERE last_message_at IS NOT NULL
          UNION ALL SELECT store_id, 'assignee_user_id:' || COALESCE(assignee_user_id, '')
              FROM conversations WHERE last_message_at IS NOT NULL)
    GROUP BY store_id, k;

CREATE TRIGGER conversations_counted_in AFTER INSERT ON conversations
WHEN NEW.last_message_at IS NOT NULL BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'conversations', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status
              UNION ALL SELECT 'channel_kind:' || NEW.channel_kind
              UNION ALL SELECT 'priority:' || NEW.priority
              UNION ALL SELECT 'assignee_user_id:' || COALESCE(NEW.assignee_user_id, ''))
        WHERE true
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER conversations_counted_out AFTER DELETE ON conversations
WHEN OLD.last_message_at IS NOT NULL BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'conversations'
          AND key IN ('', 'status:' || OLD.status, 'channel_kind:' || OLD.channel_kind,
                      'priority:' || OLD.priority,
                      'assignee_user_id:' || COALESCE(OLD.assignee_user_id, ''));
END;

CREATE TRIGGER conversations_recounted
AFTER UPDATE OF last_message_at, status, channel_kind, priority, assignee_user_id ON conversations
WHEN (OLD.last_message_at IS NULL) IS NOT (NEW.last_message_at IS NULL)
  OR OLD.status IS NOT NEW.status OR OLD.channel_kind IS NOT NEW.channel_kind
  OR OLD.priority IS NOT NEW.priority OR OLD.assignee_user_id IS NOT NEW.assignee_user_id BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE OLD.last_message_at IS NOT NULL
          AND store_id = OLD.store_id AND list = 'conversations'
          AND key IN ('', 'status:' || OLD.status, 'channel_kind:' || OLD.channel_kind,
                      'priority:' || OLD.priority,
                      'assignee_user_id:' || COALESCE(OLD.assignee_user_id, ''));
    INSERT INTO list_counts (store_id, list, key, n)
        SELECT NEW.store_id, 'conversations', k, 1
        FROM (SELECT '' AS k UNION ALL SELECT 'status:' || NEW.status
              UNION ALL SELECT 'channel_kind:' || NEW.channel_kind
              UNION ALL SELECT 'priority:' || NEW.priority
              UNION ALL SELECT 'assignee_user_id:' || COALESCE(NEW.assignee_user_id, ''))
        WHERE NEW.last_message_at IS NOT NULL
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;
