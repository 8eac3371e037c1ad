-- Provider and e-mail message ids are looked up per channel (duplicate deliveries, e-mail
-- threading, delivery statuses): by the id itself, not by walking every conversation of
-- the channel.
CREATE INDEX messages_by_external_id ON messages (external_id) WHERE external_id IS NOT NULL;
