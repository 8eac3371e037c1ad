-- Writes shared by the REST routes and the assistant (issue 16), and the merchant's reply to
-- a review.

-- How a write was made when it was not an ordinary request: 'assistant' when the assistant
-- proposed it and `actor_user_id` approved it. Null for every other entry, older ones included.
ALTER TABLE audit_log ADD COLUMN via TEXT;

-- A refund's audit entry is written when it settles, maybe by the background check long after
-- the request, from what the refund kept of its requester; it keeps their `via` as well.
ALTER TABLE refunds ADD COLUMN actor_via TEXT;

-- The merchant's public reply to a review (at most 2,000 characters) and when it was last
-- set; both null without one.
ALTER TABLE reviews ADD COLUMN reply TEXT;
ALTER TABLE reviews ADD COLUMN replied_at TEXT;
-- Stored bodies show the new fields too (as null), as the API now does for every review.
UPDATE reviews SET rendered = json_set(rendered, '$.reply', NULL, '$.replied_at', NULL);
