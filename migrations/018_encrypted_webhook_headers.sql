-- Webhook header values are often a receiver's credentials (Authorization, X-Api-Key): they are
-- stored encrypted, like the signing secrets, as one AES-256-GCM box of the whole name → value
-- object (src/webhooks/header-box.ts). The key is the application's, not the database's, so this
-- migration cannot encrypt the existing rows: every process does it at start (sealPlainHeaders,
-- run by loadKeys), moving `headers` into this column and leaving '{}' behind.
--
-- Expand only: `headers` stays, so the previous release's code keeps its columns. Its processes
-- still running during a rolling upgrade see '{}' for an encrypted webhook (docs/operations.md,
-- Upgrades); what they write into `headers` is read as the newer value and sealed at the next start.
ALTER TABLE webhooks ADD COLUMN headers_encrypted text;
