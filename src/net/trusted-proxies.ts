import ipaddr from 'ipaddr.js';
import { parseNetworks, type Network } from './address-policy.js';

/**
 * Which peers may tell Plaza the client's address in X-Forwarded-For (TRUST_PROXY):
 * - empty or 0: none; the socket address is the client;
 * - a list of proxy addresses and CIDR ranges ("10.0.0.0/8, 192.0.2.7"): a hop is trusted only
 *   when it is one of them, so a client that reaches Plaza directly is never trusted and cannot
 *   choose its address;
 * - a number n (1–10): the last n hops, whoever they are. Weaker: anyone who can reach Plaza
 *   without passing the proxy chooses the address the login limits count.
 */
export type ProxyTrust = { hops: number } | { networks: Network[] };

const HOPS = /^\d+$/;
const MAX_HOPS = 10;

/** Parses TRUST_PROXY; throws naming a bad entry. A single address is its own /32 or /128. */
export function parseTrustProxy(value: string): ProxyTrust {
  const text = value.trim();
  if (text === '') return { hops: 0 };
  if (HOPS.test(text)) {
    const hops = Number(text);
    if (hops > MAX_HOPS) throw new Error(`a hop count is at most ${MAX_HOPS}`);
    return { hops };
  }
  const entries = text.split(',').map((entry) => entry.trim()).filter(Boolean);
  return {
    networks: entries.flatMap((entry) => {
      if (entry.includes('/')) return parseNetworks(entry);
      if (!ipaddr.isValid(entry)) throw new Error(`"${entry}" is neither a proxy address nor a CIDR range (like 10.0.0.0/8)`);
      const address = ipaddr.process(entry);
      return [[address, address.kind() === 'ipv4' ? 32 : 128] as Network];
    }),
  };
}

/** Fastify's trustProxy function: is the hop at `address` (`hop` places from the socket) one of ours? */
export function proxyTrustFunction(trust: ProxyTrust): (address: string, hop: number) => boolean {
  if ('hops' in trust) return (_address, hop) => hop < trust.hops;
  return (address) => {
    if (!ipaddr.isValid(address)) return false;
    // ::ffff:10.0.0.1 (a dual-stack socket) is the IPv4 proxy 10.0.0.1.
    const parsed = ipaddr.process(address);
    return trust.networks.some(([network, bits]) => parsed.kind() === network.kind() && parsed.match(network as never, bits));
  };
}
