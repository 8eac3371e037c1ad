-- The brand system (issue 18; spec 2.11, 3 "Brand system", 4.7): every saved version of a
-- store's brand system, kept whole and never changed. The current system is the store's
-- highest version; a restore copies an old one into a new version.

CREATE TABLE brand_versions (
    store_id   TEXT NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    -- 1 for the default a new store starts with, then +1 per save (int32, as the path
    -- parameter that names it).
    version    INTEGER NOT NULL CHECK (version BETWEEN 1 AND 2147483647),
    -- The `system` object of 2.11 as JSON, validated by the brand area before it is written.
    system     TEXT NOT NULL,
    -- What the merchant (or the generation) said about this version; null when nothing was.
    prompt     TEXT,
    summary    TEXT,
    -- The user who saved it (the store's creator for the default); no foreign key: a version
    -- keeps naming its author after the account is gone.
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    -- A version is named by its store and number, and nothing else refers to it: the pair is
    -- the key (two saves racing for one number cannot both commit).
    PRIMARY KEY (store_id, version)
) WITHOUT ROWID;

-- Versions are immutable: no write path updates one, and this keeps it so.
CREATE TRIGGER brand_versions_are_immutable BEFORE UPDATE ON brand_versions BEGIN
    SELECT RAISE(ABORT, 'brand versions are immutable');
END;
