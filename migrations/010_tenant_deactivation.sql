-- Issue 12: marketplaces can be deactivated like sellers (sellers.active exists since 001 but was
-- not enforced). A deactivated tenant's users and API keys are refused on every request
-- (src/accounts/tenant-state.ts), its sessions revoked, its webhooks paused with reason
-- 'tenant_deactivated' (src/accounts/tenant-activation.ts).
ALTER TABLE marketplaces ADD COLUMN active boolean NOT NULL DEFAULT true;

ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_revoked_reason_check,
  ADD CONSTRAINT refresh_tokens_revoked_reason_check
  CHECK (revoked_reason IN ('rotated', 'security_breach_token_reuse', 'logout', 'revoke_all', 'session_revoked', 'password_changed', 'user_deactivated', 'tenant_deactivated'));

-- Fan-out also matches webhooks paused by their tenant's deactivation: what matches meanwhile is
-- held (released when the tenant is activated again), as for a pause by the owner. A new index for
-- the new predicate; webhooks_matching_or_paused stays for the previous release's fan-out during a
-- rolling upgrade (docs/operations.md, Upgrades) and can go in the next release.
CREATE INDEX webhooks_matching_or_held ON webhooks (marketplace_code, topic)
  WHERE active OR disabled_reason IN ('disabled_by_user', 'tenant_deactivated');

-- Session revocation at a tenant's deactivation finds the users of a marketplace (sellers' users
-- through users_seller below).
CREATE INDEX users_marketplace ON users (marketplace_code) WHERE marketplace_code IS NOT NULL;
CREATE INDEX users_seller ON users (seller_id);
-- The webhooks a tenant owns are found through webhooks_tenant_code_key (tenant_kind, tenant_id, …).
