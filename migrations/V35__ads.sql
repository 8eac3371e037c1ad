-- Ad-network catalog (issue 20 "Ad-network catalog"): per store, the token that opens its
-- product feed and the ad network catalog the push sync writes to.

CREATE TABLE ads_settings (
    store_id              TEXT PRIMARY KEY REFERENCES stores (id) ON DELETE CASCADE,
    -- sha256 of the feed token (the raw token is shown once, when created or rotated)
    feed_token_hash       BLOB,
    feed_token_created_at TEXT,
    -- the ad network's catalog the push sync writes to, and its access token sealed with
    -- the data directory's key (secrets.key; associated data: the store id)
    catalog_id            TEXT,
    access_token_sealed   BLOB,
    -- the last push (manual or scheduled): when it ran, how many items it sent, and the
    -- provider's error when it failed (null when it succeeded)
    last_sync_at          TEXT,
    last_sync_items       INTEGER,
    last_sync_error       TEXT,
    updated_at            TEXT NOT NULL,
    CHECK ((catalog_id IS NULL) = (access_token_sealed IS NULL))
) WITHOUT ROWID;
-- The scheduled sync's walk: configured stores by when they last synced.
CREATE INDEX ads_settings_by_last_sync ON ads_settings (last_sync_at)
    WHERE catalog_id IS NOT NULL;
