import type { FastifyBaseLogger } from 'fastify';
import { pruneAuthRecords } from './auth/auth-maintenance.js';
import type { Config } from './config.js';
import { pruneExpired } from './delivery/maintenance.js';
import { disableFailingWebhooks } from './delivery/queue/webhook-health.js';
import type { MaintenanceJob } from './maintenance/scheduler.js';
import { pruneSnapshots } from './events/snapshots/snapshots.repository.js';
import { pruneExpiredPortalRecords } from './portal/portal-links.repository.js';
import { pruneWebhookHistory } from './webhooks/webhook-history.repository.js';

/**
 * The maintenance jobs of every feature, which `plaza serve` hands to the scheduler
 * (src/maintenance/) in every role: the features do not know the scheduler, nor the scheduler them.
 * One interval for all of them (MAINTENANCE_INTERVAL_SECONDS): none needs another.
 */
export function maintenanceJobs(config: Config, logger: FastifyBaseLogger): MaintenanceJob[] {
  const intervalSeconds = config.MAINTENANCE_INTERVAL_SECONDS;
  return [
    {
      name: 'failing-webhooks',
      intervalSeconds,
      run: async (db, now) => {
        const disabled = await disableFailingWebhooks(db, now, config.DELIVERY_DISABLE_AFTER_DAYS);
        for (const webhook of disabled) logger.warn({ webhookId: webhook.id, marketplaceCode: webhook.marketplace_code, code: webhook.code }, 'webhook disabled: deliveries kept failing');
        return disabled.length;
      },
    },
    { name: 'delivery-retention', intervalSeconds, run: (db, now) => pruneExpired(db, now, config.DELIVERY_RETENTION_DAYS, config.NOTIFICATION_RETENTION_DAYS) },
    // An entity's snapshot (the last publication or order accepted) is kept as long as its events.
    { name: 'entity-snapshots', intervalSeconds, run: (db, now) => pruneSnapshots(db, now, config.DELIVERY_RETENTION_DAYS) },
    {
      name: 'auth-records',
      intervalSeconds,
      run: (db, now) => pruneAuthRecords(db, now, { refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS, auditRetentionDays: config.AUTH_AUDIT_RETENTION_DAYS }),
    },
    { name: 'portal-links', intervalSeconds, run: (db, now) => pruneExpiredPortalRecords(db, now) },
    // Webhook history is audit too: the same retention (a deleted webhook's is read by admins until then).
    { name: 'webhook-history', intervalSeconds, run: (db, now) => pruneWebhookHistory(db, now, config.AUTH_AUDIT_RETENTION_DAYS) },
  ];
}
