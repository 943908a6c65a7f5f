import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Network } from '../../net/address-policy.js';
import { vetHost, type Resolve } from './ssrf-guard.js';

/** Most host names remembered; the map is emptied when full (a forgotten name is resolved again). */
const MAX_NAMES = 10_000;

/** One spelling per address: an IPv4-mapped IPv6 address is its IPv4 address, IPv6 in its short form. */
export function canonicalAddress(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).toString() : address;
}

/**
 * The address a callback host is sent to, for the send budget per destination (send-budgets.ts): the
 * address the SSRF guard last connected to for that name (ssrf-guard.ts tells every connection it
 * vets), or, before a first connection, the one the guard would choose. Keyed by the address rather
 * than the name, `localhost`, `127.1`, `[::ffff:127.0.0.1]` and any DNS name pointing at one receiver
 * share one budget.
 *
 * Residual: a name whose DNS answer changes is counted at the address of its latest connection,
 * while sends may still go over an older pooled connection (at most the agent's keep-alive, 4 s);
 * and one machine with several addresses has a budget per address.
 */
export class DestinationAddresses {
  private readonly byName = new Map<string, string>();

  constructor(
    private readonly allowed: readonly Network[],
    private readonly resolve?: Resolve,
  ) {}

  /** What the guarded agent calls for every connection it opens. */
  noteConnected(hostname: string, address: string): void {
    if (this.byName.size >= MAX_NAMES) this.byName.clear();
    this.byName.set(bare(hostname), canonicalAddress(address));
  }

  /** The budget key of a callback URL's hostname; the name itself when it cannot be resolved (the send then fails at connect). */
  async keyOf(hostname: string): Promise<string> {
    const host = bare(hostname);
    if (isIP(host)) return canonicalAddress(host);
    const known = this.byName.get(host);
    if (known !== undefined) return known;
    try {
      const address = await vetHost(host, this.allowed, this.resolve);
      this.noteConnected(host, address);
      return canonicalAddress(address);
    } catch {
      return `name:${host}`;
    }
  }
}

function bare(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
}
