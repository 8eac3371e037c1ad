-- Issue 22: the plan's limits read counters instead of counting rows on every create. An order
-- created in a calendar month (UTC) counts under key 'month:YYYY-MM' of the store's 'orders'
-- list (products read the list's '' key from V36), so `orders_per_month` sums one row per
-- store of the organization instead of a COUNT over its month of orders on the writer.
-- `created_at` is always RFC 3339 in UTC (crate::time::format), so its first 7 characters
-- are the month. Orders never change `created_at`; deleting one uncounts it, as the COUNT did.

INSERT INTO list_counts (store_id, list, key, n)
    SELECT store_id, 'orders', 'month:' || substr(created_at, 1, 7), COUNT(*) FROM orders
    GROUP BY store_id, substr(created_at, 1, 7);

CREATE TRIGGER orders_counted_in_month AFTER INSERT ON orders BEGIN
    INSERT INTO list_counts (store_id, list, key, n)
        VALUES (NEW.store_id, 'orders', 'month:' || substr(NEW.created_at, 1, 7), 1)
        ON CONFLICT (store_id, list, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER orders_counted_out_month AFTER DELETE ON orders BEGIN
    UPDATE list_counts SET n = n - 1
        WHERE store_id = OLD.store_id AND list = 'orders'
          AND key = 'month:' || substr(OLD.created_at, 1, 7);
END;
