import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordedHeaders } from './delivery/dispatch/sent-headers.js';
import { loggableUrl } from './logging.js';

/** Names of headers and query parameters that hold credentials, and some that do not. */
const SECRET = ['Authorization', 'X-Api-Key', 'api_key', 'key', 'X-Auth-Token', 'access_token', 'Cookie', 'X-Session-Id', 'X-JWT', 'password', 'passwd', 'X-Signature', 'X-Credential', 'client_secret', 'X-Bearer'];
const PLAIN = ['Content-Language', 'X-Request-Id', 'Accept', 'X-Tenant', 'x-shop', 'limit', 'cursor', 'seller_id', 'status'];

const hiddenInLog = (name: string) => loggableUrl(`/v1/x?${encodeURIComponent(name)}=credential-value`).endsWith('=[redacted]');
const maskedInRecord = (name: string) => recordedHeaders({ [name]: 'credential-value' })![name] !== 'credential-value';

// Issue 35: the request log and the delivery record each had their own pattern, and they differed (`jwt`, `bearer`, `pass`, `key`).
describe('one list of secret-looking names (secret-names.ts)', () => {
  test('the request log hides the query values of exactly those names', () => {
    assert.deepEqual(SECRET.filter((name) => !hiddenInLog(name)), []);
    assert.deepEqual(PLAIN.filter(hiddenInLog), []);
  });

  test("a delivery attempt's record masks the header values of the same names as the log", () => {
    for (const name of [...SECRET, ...PLAIN]) assert.equal(maskedInRecord(name), hiddenInLog(name), name);
  });
});
