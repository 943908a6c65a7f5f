/**
 * CORS_ORIGINS as a set of origins. Each entry must be an origin exactly as a browser sends it
 * (scheme, host, port if not the default; no path, no trailing slash), so that the comparison is a
 * plain lookup. `*` is refused: the API's origins are named.
 */
export function parseCorsOrigins(value: string): Set<string> {
  const origins = new Set<string>();
  for (const entry of value.split(',').map((part) => part.trim()).filter(Boolean)) {
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== entry) {
      throw new Error(`"${entry}" is not an origin: write scheme://host[:port], like https://app.example.com (no path, no trailing slash, lower case; * is not accepted)`);
    }
    origins.add(entry);
  }
  return origins;
}
