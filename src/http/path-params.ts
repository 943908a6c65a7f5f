import { Type } from 'typebox';

/**
 * The path parameters every marketplace-scoped route shares. A marketplace or webhook code is 1–100
 * ASCII letters, digits, `_` or `-` (the spec's rule for webhook codes, used for marketplaces too):
 * anything else is refused before it reaches SQL.
 */
export const CODE_PATTERN = '^[A-Za-z0-9_-]{1,100}$';
const CODE = new RegExp(CODE_PATTERN);

/** Whether a text is a marketplace or webhook code (outside the schemas: the CLI, cursors). */
export const isCode = (text: string): boolean => CODE.test(text);

/** Largest id stored in a PostgreSQL `integer` column (sellers, connections, users, API keys). */
export const MAX_INT32 = 2_147_483_647;

/** Such an id as decimal text (up to ten digits, no sign, no leading zero); at most MAX_INT32 too. */
export const ID_TEXT_PATTERN = '^[1-9][0-9]{0,9}$';
const ID_TEXT = new RegExp(ID_TEXT_PATTERN);

/**
 * The id a decimal text names, or undefined: 1 to MAX_INT32, as the API's integer ids. The one
 * reading of an id given as text: CLI arguments, string forms of `seller_id`, a token's `sub`.
 */
export function idFromText(text: string): number | undefined {
  if (!ID_TEXT.test(text)) return undefined;
  const id = Number(text);
  return id <= MAX_INT32 ? id : undefined;
}

export const MarketplaceCode = Type.String({ pattern: CODE_PATTERN, description: 'Code of the marketplace', examples: ['mlb'] });
export const WebhookCode = Type.String({ pattern: CODE_PATTERN, description: 'Code of the webhook', examples: ['orders-main'] });

export const MarketplaceParams = Type.Object({ marketplace_code: MarketplaceCode });
export const WebhookParams = Type.Object({ marketplace_code: MarketplaceCode, code: WebhookCode });
