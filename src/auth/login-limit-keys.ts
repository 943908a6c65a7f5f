import { createHmac } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/** The three counters an attempt touches (see login-limit-rules.ts for what each one does). */
export interface AttemptKeys {
  /** (account, client address): consecutive failures of one account from one place. */
  pair: string;
  /** The account over all addresses: only tells that an account is under attack, never refuses. */
  user: string;
  /** The client address over all accounts: spraying and credential stuffing from one place. */
  ip: string;
}

/**
 * The counter of a client address: IPv4 as is, IPv6 per /64 (one customer line or host usually
 * holds a whole /64, so counting single addresses would give an attacker 2^64 fresh counters),
 * and an IPv4-mapped IPv6 address (::ffff:1.2.3.4, what a dual-stack socket reports) as its IPv4.
 */
export function ipKeyOf(ip: string): string {
  const text = ip.trim();
  if (!ipaddr.isValid(text)) return `other:${text.toLowerCase()}`;
  const address = ipaddr.process(text);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((part) => part.toString(16)).join(':')}::/64`;
}

/**
 * The counter of an account. `account` is what the database matched (login-account.ts): the user
 * id, or for a name that matches nobody the name as the database folds it, so that every spelling
 * the lookup treats as one account (`alice`, `ALICE`, `alİce`) counts as one. The key holds an HMAC
 * under a key derived from SECRETS_KEY (`counterKey`): people type passwords into the user name
 * field, and a plain hash of one falls to a dictionary of guesses by whoever reads the table.
 */
export function accountKeyOf(account: string, counterKey: Buffer): string {
  return createHmac('sha256', counterKey).update(account).digest('base64url');
}

/**
 * The three counters of an attempt. Prefixes keep the kinds apart (an account can never produce
 * an IP key), and neither part can contain the other's separator: base64url has no ':' and the IP
 * part comes last.
 */
export function attemptKeys(account: string, ip: string, counterKey: Buffer): AttemptKeys {
  const user = accountKeyOf(account, counterKey);
  const address = ipKeyOf(ip);
  return { pair: `uip:${user}:${address}`, user: `u:${user}`, ip: `ip:${address}` };
}
