-- The JWT signing keys' columns are a timeline (src/keys/jwt-key-timeline.ts), read on the
-- database's clock by every process at each signature. Kept under their names, so that the
-- previous release reads the same rows the same way during an upgrade (it signs from activates_at,
-- stops at retired_at); only their meaning is written down here.
COMMENT ON COLUMN jwt_signing_keys.created_at IS
  'published_at: in the JWKS from then (every process within 60 s)';
COMMENT ON COLUMN jwt_signing_keys.activates_at IS
  'signs_from: no process signs with the key before; a rotation sets it 60 s + JWKS max-age + verifier cooldown after created_at';
COMMENT ON COLUMN jwt_signing_keys.retired_at IS
  'signs until (exclusive): the successor''s signs_from, set when the rotation is written; the key stays published until its tokens expire';
