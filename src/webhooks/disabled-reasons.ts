/**
 * Why a webhook is disabled: a stable code that clients branch on (stored in webhooks.disabled_reason)
 * and a sentence for people (`disabled_message`, derived here so that the wording can improve
 * without rewriting rows).
 */
export const DISABLED_REASONS = {
  disabled_by_user: 'Disabled with PATCH {"active": false}.',
  receiver_gone: 'The receiver answered 410 Gone: it asked for no more notifications.',
  failing_too_long: 'Deliveries kept failing for DELIVERY_DISABLE_AFTER_DAYS days without one success.',
  tenant_deactivated: 'Its seller or marketplace is deactivated: matching events are held until it is activated again.',
} as const;

export type DisabledReason = keyof typeof DISABLED_REASONS;

export function disabledMessage(reason: string | null): string | null {
  if (reason === null) return null;
  return DISABLED_REASONS[reason as DisabledReason] ?? reason;
}
