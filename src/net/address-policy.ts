import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type Network = [Address, number];

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const DOTTED_QUAD = `${OCTET}(?:\\.${OCTET}){3}`;
const PREFIX = '(?:0|[1-9]\\d{0,2})';
/**
 * What an allowed network may look like: IPv4 as four decimal octets without leading zeros, IPv6 in
 * hex groups (an IPv4 tail as a dotted quad too), no zone id. ipaddr.js also reads `010.0.0.0/8`
 * (octal: 8.0.0.0/8), `0x7f.1/32` or `2130706433/32`: an operator who wrote 192.168.010.0/24 would
 * have opened 192.168.8.0/24 to every tenant instead. Such entries are refused.
 */
const CANONICAL_CIDR = new RegExp(`^(?:${DOTTED_QUAD}|[0-9a-fA-F:]*:(?:[0-9a-fA-F]{0,4}|${DOTTED_QUAD}))/${PREFIX}$`);

/** Parses WEBHOOK_ALLOWED_NETWORKS ("127.0.0.0/8, ::1/128"); throws naming a bad entry. */
export function parseNetworks(list: string): Network[] {
  return list
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      try {
        if (!CANONICAL_CIDR.test(entry)) throw new Error('not canonical');
        return ipaddr.parseCIDR(entry);
      } catch {
        throw new Error(`"${entry}" is not a CIDR range written as four decimal octets (like 127.0.0.0/8; no leading zeros) or IPv6 hex groups (like ::1/128)`);
      }
    });
}

/**
 * The IPv4 address hidden in an IPv6 one (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96,
 * IPv4-compatible ::a.b.c.d), so that the IPv4 rules apply to it as well.
 */
function unwrap(address: Address): Address {
  if (address.kind() !== 'ipv6') return address;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  const parts = v6.parts;
  const embedded = () => new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
  const isNat64 = parts[0] === 0x64 && parts[1] === 0xff9b && parts.slice(2, 6).every((part) => part === 0);
  const isCompatible = parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || parts[7]! > 1);
  return isNat64 || isCompatible ? embedded() : address;
}

/**
 * The range an address falls in, as ipaddr.js names it ('unicast' is the public internet;
 * 'loopback', 'private', 'linkLocal' (169.254.169.254, the cloud metadata address),
 * 'carrierGradeNat', 'multicast', 'unspecified', 'reserved', 'uniqueLocal', … are not).
 * Returns 'invalid' for text that is not an IP address.
 */
export function addressRange(text: string): string {
  if (!ipaddr.isValid(text)) return 'invalid';
  return unwrap(ipaddr.parse(text)).range();
}

/** Whether a callback may connect to this address: public unicast, or inside an allowed network. */
export function isAddressAllowed(text: string, allowed: readonly Network[]): boolean {
  if (!ipaddr.isValid(text)) return false;
  const raw = ipaddr.parse(text);
  const address = unwrap(raw);
  for (const [network, bits] of allowed) {
    for (const candidate of [address, raw]) {
      if (candidate.kind() === network.kind() && candidate.match([network, bits] as never)) return true;
    }
  }
  return address.range() === 'unicast';
}

/**
 * The addresses `localhost` and every name under it stand for (RFC 6761 §6.3: this machine's
 * loopback, never looked up in DNS), IPv4 first. Plaza treats such a name as these addresses, at
 * create and at connect time alike, so a callback to `http://localhost/` is judged like one to
 * `http://127.0.0.1/` wherever it is checked, whatever the machine's resolver or hosts file says.
 */
export const LOCALHOST_ADDRESSES = ['127.0.0.1', '::1'] as const;

/** `localhost`, `LOCALHOST.`, `api.localhost`: a name that is this machine's loopback. */
export function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** The loopback addresses a localhost name may be reached at under `allowed`, IPv4 first (none by default). */
export function allowedLocalhostAddresses(allowed: readonly Network[]): string[] {
  return LOCALHOST_ADDRESSES.filter((address) => isAddressAllowed(address, allowed));
}
