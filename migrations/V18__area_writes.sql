-- Writes shared by the REST routes and the assistant (issue 16).

-- How a write was made when it was not an ordinary request: 'assistant' when the assistant
-- proposed it and `actor_user_id` approved it. Null for every other entry, older ones included.
ALTER TABLE audit_log ADD COLUMN via TEXT;

-- A refund's audit entry is written when it settles, maybe by the background check long after
-- the request, from what the refund kept of its requester; it keeps their `via` as well.
ALTER TABLE refunds ADD COLUMN actor_via TEXT;
