/**
 * PORTAL_FRAME_ANCESTORS as a list of origins that may frame the portal (the CSP's frame-ancestors).
 * Each entry is an origin exactly as a browser sends it: https, or http only for a loopback host
 * (a marketplace's development site), since a page framed over plain HTTP from elsewhere could be
 * rewritten on the way. Commas or spaces separate them; empty: none (the portal refuses framing).
 */
export function parseFrameAncestors(value: string): string[] {
  const origins: string[] = [];
  for (const entry of value.split(/[\s,]+/).filter(Boolean)) {
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    const loopback = url !== undefined && (url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname));
    // A host name or an address: URL accepts `*` in a host, which the CSP would read as a wildcard.
    if (!url || url.origin !== entry || !/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname) || !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback))) {
      throw new Error(`"${entry}" is not an https origin: write https://host[:port], like https://admin.marketplace.example (no path, no trailing slash, lower case, no wildcard; http only for localhost or 127.0.0.1)`);
    }
    if (!origins.includes(entry)) origins.push(entry);
  }
  return origins;
}
