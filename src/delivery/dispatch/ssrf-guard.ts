import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { addressRange, allowedLocalhostAddresses, isAddressAllowed, isLocalhostName, LOCALHOST_ADDRESSES, type Network } from '../../net/address-policy.js';

/** A callback host resolved to an address Plaza must not reach (loopback, private, metadata, …). */
export class BlockedAddressError extends Error {
  readonly code = 'PLAZA_BLOCKED_ADDRESS';
}

export type Resolve = (hostname: string) => Promise<string[]>;

const resolveAll: Resolve = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * The one address to connect to for `hostname`, after checking every address it resolves to.
 * One bad address refuses the host: a name that resolves to both a public and a private address is
 * an attack, not a misconfiguration.
 */
export async function vetHost(hostname: string, allowed: readonly Network[], resolve: Resolve = resolveAll): Promise<string> {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else if (isLocalhostName(host)) {
    // Not asked of DNS (see LOCALHOST_ADDRESSES): the same answer as at create. Both addresses are
    // this machine's, so the one allowed is used rather than the other refusing the name.
    const reachable = allowedLocalhostAddresses(allowed);
    if (reachable.length === 0) throw new BlockedAddressError(`blocked address ${LOCALHOST_ADDRESSES[0]} (loopback) for ${host}`);
    return reachable[0]!;
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'lookup failed';
      throw Object.assign(new Error(`cannot resolve ${host}: ${code}`), { code: 'PLAZA_DNS_FAILED' });
    }
  }
  if (addresses.length === 0) throw Object.assign(new Error(`cannot resolve ${host}: no address`), { code: 'PLAZA_DNS_FAILED' });
  for (const address of addresses) {
    if (!isAddressAllowed(address, allowed)) {
      const suffix = address === host ? '' : ` for ${host}`;
      throw new BlockedAddressError(`blocked address ${address} (${addressRange(address)})${suffix}`);
    }
  }
  return addresses[0]!;
}

export interface GuardedAgentOptions {
  allowed: readonly Network[];
  connectTimeoutMs: number;
  /** Longest wait for response headers and between body chunks. */
  responseTimeoutMs: number;
  resolve?: Resolve;
  /** Told the address of every connection opened (the worker's send budget per destination address). */
  onConnect?: (hostname: string, address: string) => void;
}

/**
 * An undici Agent whose every connection is vetted at connect time, then opened to the vetted
 * address itself: there is no second DNS lookup for an attacker to answer differently (DNS
 * rebinding). The Host header and TLS SNI keep the callback's hostname (undici derives both from
 * the origin, not from the address we connect to).
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const connectSocket = buildConnector({ timeout: options.connectTimeoutMs });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    vetHost(connectOptions.hostname, options.allowed, options.resolve).then(
      (address) => {
        options.onConnect?.(connectOptions.hostname, address);
        connectSocket({ ...connectOptions, hostname: address }, callback);
      },
      (error: Error) => callback(error, null),
    );
  };
  return new Agent({
    connect,
    headersTimeout: options.responseTimeoutMs,
    bodyTimeout: options.responseTimeoutMs,
    keepAliveTimeout: 4000,
    // As many sockets per receiver origin as the sends need: each caller's own per-tenant limits
    // bound them (the worker's caps per webhook and tenant; TENANT_TESTS_PER_MINUTE for tests). A
    // cap here would be shared by every tenant whose callbacks are on one host: one tenant's
    // requests held open there made another's wait in the client, and that wait counted against
    // its own timeout.
    connections: null,
  });
}
