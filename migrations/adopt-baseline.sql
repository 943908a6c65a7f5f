-- One-off step for a database migrated with the migrations that migrations/001_baseline.sql
-- replaced before the first release (issue 35; docs/operations.md, Upgrades). Plaza refuses to start
-- on such a database (exit 2) until this has run:
--
--   psql "$DATABASE_URL" --single-transaction -v ON_ERROR_STOP=1 -f migrations/adopt-baseline.sql
--
-- It records the baseline as applied in place of the old files, and only when the database applied
-- every one of them, up to 025_delivery_streams: their schema is then exactly the baseline's (the
-- test of src/db/migrations.test.ts migrates a database with the old files and compares). The
-- checksum is left NULL: the next start records the baseline file's own. Not a migration (its name
-- has no number), so the migration runner never applies it. The checks come first: with psql's
-- -v ON_ERROR_STOP=1 a refusal stops it before anything is written.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM schema_migrations WHERE name = '001_baseline') THEN
    RAISE EXCEPTION 'the baseline is already recorded here: nothing to do';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 25 AND name = '025_delivery_streams')
     OR EXISTS (SELECT 1 FROM schema_migrations WHERE version > 25) THEN
    RAISE EXCEPTION 'this database did not apply the old migrations up to 025_delivery_streams, and no later one: its schema is not the baseline''s; recreate it';
  END IF;
END $$;
DELETE FROM schema_migrations;
INSERT INTO schema_migrations (version, name, checksum) VALUES (1, '001_baseline', NULL);
