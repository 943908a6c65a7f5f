/**
 * Names whose values are credentials, of a header or of a query parameter: `Authorization`,
 * `X-Api-Key`, `Cookie`, `?access_token=`, `?x-api-key=`… The one list of everything that shows or
 * keeps such a value, so that what one place hides another does not show: the request log replaces
 * the query's (logging.ts), a delivery attempt's record masks its webhook's own headers'
 * (delivery/dispatch/sent-headers.ts). A name counts when it contains one of these, in any case.
 */
const SECRET_LOOKING_NAME = /auth|token|secret|pass|key|jwt|signature|cookie|credential|session|bearer/i;

export const looksSecret = (name: string): boolean => SECRET_LOOKING_NAME.test(name);
