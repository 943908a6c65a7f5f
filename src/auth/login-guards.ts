import type { FeatureDeps } from '../deps.js';
import { createLoginLimiter, type LoginLimiter } from './login-limits.js';
import { RefusedLoginAudit } from './refused-login-audit.js';

/** What guards the login route: the limits, and the audit of refusals that they cause. */
export interface LoginGuards {
  limiter: LoginLimiter;
  refusals: RefusedLoginAudit;
  /** Writes the last open refusal counts and closes the limiter's store. */
  close(): Promise<void>;
}

/** One set per process door that logs users in (the API and the portal share the same counters). */
export function createLoginGuards(deps: FeatureDeps): LoginGuards {
  const limiter = createLoginLimiter({ config: deps.config, db: deps.db, counterKey: deps.keys.loginCounterKey });
  const refusals = new RefusedLoginAudit(deps.db, deps.clock, deps.config.LOGIN_REFUSAL_AUDIT_WINDOW_SECONDS * 1000);
  return {
    limiter,
    refusals,
    async close() {
      try {
        await refusals.close();
      } finally {
        await limiter.close();
      }
    },
  };
}
