-- Issue 28: a portal link's session acts as the credential that made the link (its role,
-- marketplace and seller), confined to the link's scope, instead of as the seller it names: a
-- marketplace's link for seller S gets what that marketplace gets through the API within S, not
-- the seller's own webhooks. scope_seller is that S (NULL: the link named no seller).
ALTER TABLE portal_sessions ADD COLUMN scope_seller integer;

-- Link sessions opened before this acted as the seller (role 'seller' without an API session):
-- they granted more than their maker had, so they end now (this release's code also refuses any
-- such row that a process of the previous release opens during a rolling upgrade).
DELETE FROM portal_sessions WHERE auth_session_id IS NULL AND role = 'seller';

-- A seller's deactivation ends the link sessions scoped to it (src/accounts/tenant-activation.ts).
CREATE INDEX portal_sessions_scope_seller ON portal_sessions (scope_seller) WHERE scope_seller IS NOT NULL;
