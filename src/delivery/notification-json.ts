/**
 * `fields` as JSON text with a last member `notification`, the stored body spliced in as it is: parsed and written again, a body's numbers could change form (1.0 → 1) and
 * keys that look like integers would move to the front. The feed's items and the API's delivery
 * resource both answer the body this way, byte for byte what the receiver gets.
 */
export function withNotification(fields: Record<string, unknown>, body: string): string {
  const head = JSON.stringify(fields);
  return `${head === '{}' ? '{' : `${head.slice(0, -1)},`}"notification":${body}}`;
}
