/** Who a user is: a seller's user, a marketplace's, or an operator. */
export type Role = 'seller' | 'marketplace' | 'admin';

const ROLES: readonly Role[] = ['seller', 'marketplace', 'admin'];

/** MFA_REQUIRED_ROLES as a set; an unknown role is a start-up error (config.ts), not a silent no-op. */
export function parseRoleList(list: string): Set<Role> {
  const roles = new Set<Role>();
  for (const part of list.split(',').map((item) => item.trim()).filter(Boolean)) {
    if (!ROLES.includes(part as Role)) throw new Error(`unknown role ${JSON.stringify(part)} (roles: ${ROLES.join(', ')})`);
    roles.add(part as Role);
  }
  return roles;
}
