-- API keys may expire (docs/authentication.md, API keys): NULL never expires, as every key made
-- before. The previous release neither writes nor reads it, and its keys keep working.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;

-- Who made a key, as columns that the key list joins and a revocation follows down (a key made by
-- a key is revoked with it). Both are derived from created_by ('user:<id>', 'api_key:<id>' or
-- 'cli'), which every release writes: generated, not a second fact to keep in step, so that a key
-- made by the previous release during an upgrade is in the tree as well. Only the maker key is a
-- foreign key: keys are never deleted, users are (the list then shows the id without a name).
-- The api_keys table is small (one row per machine credential), so the rewrite that a stored
-- generated column costs is short.
ALTER TABLE api_keys
  ADD COLUMN created_by_api_key integer REFERENCES api_keys (id)
    GENERATED ALWAYS AS (CASE WHEN created_by ~ '^api_key:[0-9]{1,9}$' THEN substr(created_by, 9)::integer END) STORED,
  ADD COLUMN created_by_user integer
    GENERATED ALWAYS AS (CASE WHEN created_by ~ '^user:[0-9]{1,9}$' THEN substr(created_by, 6)::integer END) STORED;

-- A revocation's recursive walk finds the keys a key made by this index, one probe per key.
CREATE INDEX api_keys_created_by_api_key ON api_keys (created_by_api_key) WHERE created_by_api_key IS NOT NULL;
