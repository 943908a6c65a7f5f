import type { FieldError } from '../../http/errors.js';

/**
 * The one place where the API's validation errors (`body.code: must be 1 to 100 ASCII letters…`,
 * and the schema's `must NOT have more than 200 characters`) become what a seller reads beside a
 * form field: the field's label, then the problem in plain words ("Code: use 1–100 letters, digits,
 * - or _, without spaces"). Every form of the portal renders its errors through here (layout.ts).
 */

/** The label of each form field, by the name the API and the form give it. */
const LABELS: Record<string, string> = {
  code: 'Code',
  name: 'Name',
  topic: 'Topic',
  status_code: 'Order status',
  callback_url: 'Callback URL',
  seller_id: 'Seller',
  headers: 'Headers',
  delivery_mode: 'Delivery mode',
  filter: 'Filter',
  username: 'User name',
  password: 'Password',
  status: 'Status',
  since: 'Created from (UTC)',
  until: 'Created before (UTC)',
};

type Rewrite = [pattern: RegExp, plain: string | ((match: RegExpExecArray) => string)];

/** Per field, the API's messages and the words a seller gets instead; the first match wins. */
const PLAIN: Record<string, Rewrite[]> = {
  code: [
    [/^must be 1 to (\d+) ASCII letters, digits/, (m) => `use 1–${m[1]} letters, digits, - or _, without spaces`],
    [/^A webhook with code "(.*)" already exists/, (m) => `a webhook with the code ${m[1]} exists already here: choose another code`],
  ],
  name: [
    [/^must not be empty$/, 'give the webhook a name'],
    [/^must be at most (\d+) characters$/, (m) => `use at most ${m[1]} characters`],
    [/^must contain a visible character$/, 'use at least one letter, digit or sign'],
    [/^must not contain control characters$/, 'remove the invisible control characters (copied from elsewhere?)'],
  ],
  status_code: [[/^the status code must be 1 to (\d+)/, (m) => `use 1–${m[1]} letters, digits or _, like APRO`]],
  topic: [[/^must be one of/, 'choose one of the topics in the list']],
  callback_url: [
    [/^must be an absolute URL$/, 'enter the full address, starting with https://'],
    [/^must name a host/, 'enter the full address, starting with https:// and a host name'],
    [/^must use http or https$/, 'the address must start with https:// (or http://)'],
    [/^must not contain spaces or control characters$/, 'remove the spaces from the address'],
    [/^must not contain user credentials$/, 'remove the user name and password from the address'],
    [/^must not contain a fragment$/, 'remove the part from # on'],
    [/^must be at most (\d+) characters$/, (m) => `use an address of at most ${m[1]} characters`],
    [/^must not point to a (\w+) address \((.*)\)$/, (m) => `Plaza does not send to ${m[1]} addresses like ${m[2]}: use your receiver's public address`],
  ],
  seller_id: [
    [/^must be "\*" or a seller id/, 'enter * for every seller, or one seller\'s number'],
    [/^seller (\d+) is not connected to marketplace (.+)$/, (m) => `seller ${m[1]} is not connected to ${m[2]}: enter a connected seller's number, or *`],
    [/^must be your own seller id/, 'enter your own seller number, or *'],
  ],
  delivery_mode: [[/^must be one of/, 'choose "all" or "latest"']],
  filter: [[/^must be an object$/, 'write a JSON object, like {"payload.order.status": "APRO"}']],
  username: [
    [/^must NOT have fewer than 1 characters$|^must have required property/, 'enter your user name'],
    [/^must match pattern/, 'remove the invisible control characters'],
  ],
  password: [[/^must NOT have fewer than 1 characters$|^must have required property/, 'enter your password']],
  status: [[/^choose at least one/, 'tick failed, succeeded or both']],
  since: [[/^is not a date and time$/, 'enter a date and time, like 2026-01-31 12:00']],
  until: [[/^is not a date and time$/, 'enter a date and time, like 2026-01-31 12:00']],
};

/** The schema's (Ajv's) messages, whatever the field. */
const SCHEMA: Rewrite[] = [
  [/^must NOT have more than (\d+) characters$/, (m) => `use at most ${m[1]} characters`],
  [/^must NOT have fewer than 1 characters$/, 'fill this in'],
  [/^must match pattern/, 'contains characters that are not allowed'],
  [/^must have required property/, 'fill this in'],
];

/** The form field an API field belongs to: `body.headers.X-Key` is the headers box, `body.filter.payload.x` the filter's. */
export function formFieldOf(error: FieldError): string {
  const [part, name] = error.field.split('.');
  // The topic's status code comes from its own box (the form joins it to the topic).
  if (name === 'topic' && error.message.startsWith('the status code')) return 'status_code';
  return part === 'body' && name ? name : '';
}

function rewrite(rules: readonly Rewrite[], message: string): string | undefined {
  for (const [pattern, plain] of rules) {
    const match = pattern.exec(message);
    if (match) return typeof plain === 'string' ? plain : plain(match);
  }
  return undefined;
}

/** One error in a seller's words, with the field's label first: "Code: use 1–100 letters, …". */
export function plainMessage(error: FieldError): string {
  const name = formFieldOf(error);
  const label = LABELS[name] ?? (name || 'Form');
  // The part of the field below the form field: a header's name is in the message already; a filter's path is not.
  const below = error.field.split('.').slice(2).join('.');
  const where = name === 'filter' && below ? `at ${below}, ` : '';
  const message = rewrite(PLAIN[name] ?? [], error.message) ?? rewrite(SCHEMA, error.message) ?? error.message;
  return `${label}: ${where}${message}`;
}

/** The id of a form field's control in the portal's forms (layout.ts field(); the delivery mode's select is older). */
export const controlIdOf = (name: string) => (name === 'delivery_mode' ? 'f-delivery-mode' : name === 'username' || name === 'password' ? name : `f-${name}`);

/** Every message of one form field, in plain words. */
export function plainMessagesOf(errors: readonly FieldError[] | undefined, name: string): string[] {
  const own = (errors ?? []).filter((error) => formFieldOf(error) === name);
  // An empty field also fails its pattern: "enter your user name" says all there is to say.
  const empty = own.find((error) => EMPTY.test(error.message));
  return [...new Set((empty ? [empty] : own).map(plainMessage))];
}

const EMPTY = /^must NOT have fewer than 1 characters$|^must have required property/;
