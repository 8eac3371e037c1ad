-- Plan limits (issue 17 "Limits (402)"). The counts need no new index: stores_by_tenant,
-- products_by_created (store_id first) and orders_by_created (store_id, created_at) answer
-- them.
--
-- What an audit entry is about beyond its resource, as JSON (NULL for most): a
-- `billing.limit_exceeded` entry says which limit, its max and the count that passed it.
ALTER TABLE audit_log ADD COLUMN details TEXT;

-- "Were the owners told this month?", asked for each storefront order past a limit: a
-- partial index, so it costs nothing to the other audit entries.
CREATE INDEX audit_log_limit_exceeded ON audit_log (tenant_id, created_at)
    WHERE action = 'billing.limit_exceeded';
