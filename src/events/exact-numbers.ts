import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type FieldError } from '../http/errors.js';
import { jsonBodyParser, useJsonParser } from '../http/json-body.js';

/*
 * Event payloads are passed on as given, so a number must survive being read: JavaScript (and most
 * JSON parsers of the receivers) hold numbers as IEEE 754 doubles, which turn 12345678901234567891
 * into 12345678901234567000, 9007199254740993 into …992 and 1e400 into null. Plaza refuses such a
 * number with 400 naming the field (send it as a string) rather than changing it silently.
 * "Survives" means the double has the same decimal value: 1.0, 1E2 and 0.1 do (they may be written
 * back as 1, 100 and 0.1), 0.10000000000000000001 does not.
 */

/** Sign, significant digits and exponent of a decimal number's text: `-1.50e3` → `-15e2`. */
function normalise(text: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return text;
  const [, sign, whole, fraction = '', exponent = '0'] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let power = Number(exponent) - fraction.length;
  const trimmed = digits.replace(/0+$/, '');
  power += digits.length - trimmed.length;
  digits = trimmed;
  return `${sign}${digits}e${power}`;
}

export function isExactNumber(text: string): boolean {
  const value = Number(text);
  if (!Number.isFinite(value)) return false;
  return normalise(text) === normalise(String(value));
}

// A number only needs a closer look with 16+ significant digits or an exponent: any decimal of at
// most 15 significant digits round-trips through a double.
const MAYBE_INEXACT = /[0-9.]{16}|\d[eE]/;

interface Frame {
  kind: 'object' | 'array';
  key: string | number;
}

/**
 * The path (`payload.amount`, `items.2.price`) of the first number in valid JSON text that does not
 * survive, or undefined. A single pass over the text, for bodies JSON.parse has already accepted.
 */
export function findInexactNumber(text: string): { path: string; number: string } | undefined {
  if (!MAYBE_INEXACT.test(text)) return undefined;
  const stack: Frame[] = [];
  const number = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  let expectKey = false;
  for (let i = 0; i < text.length; ) {
    const char = text[i]!;
    if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (expectKey) stack.at(-1)!.key = JSON.parse(text.slice(i, end + 1)) as string;
      i = end + 1;
    } else if (char === '{' || char === '[') {
      stack.push({ kind: char === '{' ? 'object' : 'array', key: char === '{' ? '' : 0 });
      expectKey = char === '{';
      i++;
    } else if (char === '}' || char === ']') {
      stack.pop();
      i++;
    } else if (char === ':') {
      expectKey = false;
      i++;
    } else if (char === ',') {
      const top = stack.at(-1)!;
      if (top.kind === 'array') top.key = (top.key as number) + 1;
      expectKey = top.kind === 'object';
      i++;
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      number.lastIndex = i;
      const token = number.exec(text)![0];
      if (!isExactNumber(token)) return { path: stack.map((frame) => frame.key).join('.'), number: token };
      i += token.length;
    } else {
      i++; // whitespace, and the letters of true, false, null
    }
  }
  return undefined;
}

const found = new WeakMap<FastifyRequest, FieldError>();

/**
 * Replaces the JSON parser of the routes registered in `app` (an encapsulated plugin) with the
 * application's (json-body.ts), plus the number check. The finding is kept on the request and raised by
 * `refuseInexactNumbers` after authentication: an anonymous caller learns nothing about the body rules.
 */
export function parseJsonKeepingNumbersExact(app: FastifyInstance): void {
  const parse = jsonBodyParser(app);
  useJsonParser(app, (request, body, done) => {
    parse(request, body, (error, value) => {
      if (error) return done(error);
      const inexact = findInexactNumber(body);
      if (inexact) {
        const field = inexact.path ? `body.${inexact.path}` : 'body';
        found.set(request, { field, message: `the number ${inexact.number.slice(0, 40)} cannot be kept exactly (beyond double precision); send it as a string` });
      }
      done(null, value);
    });
  });
}

/** A preValidation hook, after authentication. */
export async function refuseInexactNumbers(request: FastifyRequest): Promise<void> {
  const error = found.get(request);
  if (error) throw new AppError('validation_failed', `${error.field}: ${error.message}`, { errors: [error] });
}
