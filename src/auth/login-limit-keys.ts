import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config.js';

/** Counters start over once a key's window is over (and its cooldown too). The limits are "per hour". */
export const LOGIN_LIMIT_WINDOW_SECONDS = 3600;

/** One counter that a login attempt touches, with the rule it follows. */
export interface LimitKey {
  key: string;
  /** Failures within the window before cooldowns start (at least 1: the first attempt is always free). */
  threshold: number;
  /**
   * A sliding key restarts its window at every failure, so only an hour without failures forgets
   * them ("consecutive failures" of one user from one IP). A fixed key counts failures per hour
   * from the first one (spraying and stuffing).
   */
  sliding: boolean;
}

export interface AttemptKeys {
  pair: LimitKey;
  user: LimitKey;
  ip: LimitKey;
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
 * User names are compared case-insensitively, as the users table does. The key holds a hash, not
 * the name: people type passwords into the user name field, and this table must not keep them.
 */
export function userKeyOf(username: string): string {
  return createHash('sha256').update(username.normalize('NFKC').toLowerCase()).digest('base64url');
}

/**
 * The three counters of an attempt. Prefixes keep the kinds apart (a user name can never produce
 * an IP key), and neither part can contain the other's separator: base64url has no ':' and the IP
 * part comes last.
 */
export function attemptKeys(config: Config, username: string, ip: string): AttemptKeys {
  const user = userKeyOf(username);
  const address = ipKeyOf(ip);
  return {
    pair: { key: `uip:${user}:${address}`, threshold: Math.max(config.LOGIN_FREE_FAILURES_PER_USER_IP, 1), sliding: true },
    user: { key: `u:${user}`, threshold: config.LOGIN_FAILURES_PER_USER_PER_HOUR, sliding: false },
    ip: { key: `ip:${address}`, threshold: config.LOGIN_FAILURES_PER_IP_PER_HOUR, sliding: false },
  };
}
