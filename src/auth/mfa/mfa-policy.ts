import type { Role } from '../../accounts/accounts.repository.js';
import { parseRoleList } from '../../settings/roles.js';

export const secondFactorRequiredFor = (config: { MFA_REQUIRED_ROLES: string }, role: Role): boolean => parseRoleList(config.MFA_REQUIRED_ROLES).has(role);
