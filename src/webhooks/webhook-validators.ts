import { addressRange, allowedLocalhostAddresses, isAddressAllowed, isLocalhostName, type Network } from '../net/address-policy.js';
import { idFromText, isCode, MAX_INT32 } from '../http/path-params.js';
import { isReservedHeader } from './reserved-headers.js';
import { CONTROL_CHARACTERS } from '../control-characters.js';

/**
 * The rules of a webhook's fields as pure functions, shared by the routes and tests (the property
 * tests compare them with an independent reading of the rules). Each returns either the value to
 * store or a message saying what is wrong.
 */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = <T>(message: string): Checked<T> => ({ ok: false, message });

/** A marketplace's or a webhook's code (the rule of path-params.ts), with the reason when it is not one. */
export function checkCode(code: string): Checked<string> {
  return isCode(code) ? ok(code) : fail('must be 1 to 100 ASCII letters, digits, "_" or "-"');
}

export const NAME_MAX_LENGTH = 200;
const CONTROL = new RegExp(`[${CONTROL_CHARACTERS}]`);
/** A character that shows: not white space, not a format character (a zero-width space, a direction mark); needs the `u` flag. */
export const VISIBLE_CHARACTER = '[^\\s\\p{Cf}]';
const VISIBLE = new RegExp(VISIBLE_CHARACTER, 'u');

/** Trimmed; control characters are refused because a label is shown in lists and logs, and so is a label nobody can see. */
export function checkName(name: string): Checked<string> {
  const trimmed = name.trim();
  if (trimmed.length === 0) return fail('must not be empty');
  if ([...trimmed].length > NAME_MAX_LENGTH) return fail(`must be at most ${NAME_MAX_LENGTH} characters`);
  if (CONTROL.test(trimmed)) return fail('must not contain control characters');
  if (!VISIBLE.test(trimmed)) return fail('must contain a visible character');
  return ok(trimmed);
}

export const FIXED_TOPICS = [
  'publication/create',
  'publication/update',
  'order/create',
  'order/update',
  'order/invoice_upload',
  'order/status_change',
] as const;

export const STATUS_TOPIC_PREFIX = 'order/status_change/';
const ENTERED = 'entered_';
const STATUS_CODE = /^[A-Za-z0-9_]{1,32}$/;

/**
 * The spec shows the status-specific topic both as `order/status_change/<CODE>` (requests) and
 * `order/status_change/entered_<CODE>` (responses): both are accepted, the second is stored.
 * A rest that already reads `entered_<CODE>` is taken as that form, so normalising is idempotent.
 */
export function normalizeTopic(topic: string): Checked<string> {
  if ((FIXED_TOPICS as readonly string[]).includes(topic)) return ok(topic);
  if (topic.startsWith(STATUS_TOPIC_PREFIX)) {
    const rest = topic.slice(STATUS_TOPIC_PREFIX.length);
    const code = rest.startsWith(ENTERED) ? rest.slice(ENTERED.length) : rest;
    if (STATUS_CODE.test(code)) return ok(`${STATUS_TOPIC_PREFIX}${ENTERED}${code}`);
    return fail('the status code must be 1 to 32 ASCII letters, digits or "_"');
  }
  return fail(`must be one of ${FIXED_TOPICS.join(', ')} or order/status_change/<status_code>`);
}

export const CALLBACK_URL_MAX_LENGTH = 2048;
// eslint-disable-next-line no-control-regex
const URL_FORBIDDEN_CHARACTERS = /[\u0000-\u0020\u007f]/;

/**
 * An absolute http(s) URL without credentials or fragment. A literal IP address must be one the
 * delivery may reach (public, or in WEBHOOK_ALLOWED_NETWORKS), and so must `localhost` or a name
 * under it (the loopback addresses it stands for); other host names are checked at connect time by
 * the delivery, when they are resolved. The URL is stored as given: the WHATWG parser used here is also
 * the one the sender uses, so odd IPv4 forms (`http://2130706433/`) are judged as what they mean.
 */
export function checkCallbackUrl(text: string, allowed: readonly Network[]): Checked<string> {
  if (text.length > CALLBACK_URL_MAX_LENGTH) return fail(`must be at most ${CALLBACK_URL_MAX_LENGTH} characters`);
  // The URL parser silently drops tabs and newlines and trims spaces: refuse them instead.
  if (URL_FORBIDDEN_CHARACTERS.test(text)) return fail('must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail('must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail('must use http or https');
  if (url.username !== '' || url.password !== '' || /^[a-z]+:\/\/[^/?#]*@/i.test(text)) return fail('must not contain user credentials');
  if (text.includes('#')) return fail('must not contain a fragment');
  // The parser reads a host into `http:///x`, `https:example.com` or `http:\\host` too: the URL a
  // tenant sees would not say where notifications go. The host comes right after `//`.
  if (url.hostname === '' || !/^https?:\/\/[^/\\]/i.test(text)) return fail('must name a host: http(s)://host/…');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const range = addressRange(host);
  if (range !== 'invalid' && !isAddressAllowed(host, allowed)) return fail(`must not point to a ${range} address (${host})`);
  // A localhost name is loopback by definition: refused here like 127.0.0.1, not accepted and
  // then blocked at every send (retried for days), unless a loopback address it means is allowed.
  if (isLocalhostName(host) && allowedLocalhostAddresses(allowed).length === 0) return fail(`must not point to a loopback address (${host})`);
  return ok(text);
}

export const MAX_HEADERS = 20;
export const MAX_HEADERS_BYTES = 8192;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Printable ASCII and tab: what every HTTP stack sends unchanged (no CR, LF, NUL or other controls).
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
export interface HeaderProblem {
  /** The header's name, or undefined for a problem of the whole map. */
  header?: string;
  message: string;
}

/**
 * Extra headers sent with each notification: at most 20, at most 8 KiB counting the UTF-8 bytes of
 * every name and value, names are HTTP tokens (unique ignoring case) and not reserved.
 */
export function checkHeaders(headers: Record<string, unknown>): { ok: true; value: Record<string, string> } | { ok: false; problems: HeaderProblem[] } {
  const problems: HeaderProblem[] = [];
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) problems.push({ message: `must have at most ${MAX_HEADERS} entries` });
  let bytes = 0;
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    if (!TOKEN.test(name)) {
      problems.push({ header: name, message: `header name "${printable(name)}" is not a valid HTTP token` });
      continue;
    }
    if (isReservedHeader(name)) problems.push({ header: name, message: `header "${name}" is set by the service and cannot be given` });
    // As in JSON bodies (json-body.ts): as a key of a JavaScript object it sets the prototype, and
    // the header would silently not be sent (names are lowercased there, so in any case).
    else if (name.toLowerCase() === '__proto__') problems.push({ header: name, message: 'a header cannot be named __proto__' });
    else if (seen.has(name.toLowerCase())) problems.push({ header: name, message: `header "${name}" is given twice (names ignore case)` });
    seen.add(name.toLowerCase());
    if (typeof value !== 'string') problems.push({ header: name, message: `the value of header "${name}" must be a string` });
    else if (!HEADER_VALUE.test(value)) problems.push({ header: name, message: `the value of header "${name}" must be printable ASCII (no CR, LF, NUL or other control characters)` });
    bytes += Buffer.byteLength(name) + (typeof value === 'string' ? Buffer.byteLength(value) : 0);
  }
  if (bytes > MAX_HEADERS_BYTES) problems.push({ message: `must be at most ${MAX_HEADERS_BYTES} bytes in all (names and values)` });
  return problems.length === 0 ? { ok: true, value: headers as Record<string, string> } : { ok: false, problems };
}

/** Error messages echo header names; keep them readable and free of control characters. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  const cleaned = text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return cleaned.length > 64 ? `${cleaned.slice(0, 64)}…` : cleaned;
}

export const ALL_SELLERS = '*';

/** `*`, or a seller id as a positive integer (a JSON number, or its decimal text); stored as text. */
export function normalizeSellerId(value: unknown): Checked<string> {
  const message = 'must be "*" or a seller id (a positive integer)';
  if (value === ALL_SELLERS) return ok(ALL_SELLERS);
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value > 0 && value <= MAX_INT32 ? ok(String(value)) : fail(message);
  }
  if (typeof value === 'string' && idFromText(value) !== undefined) return ok(value);
  return fail(message);
}
