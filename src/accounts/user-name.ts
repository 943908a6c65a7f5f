import { Type } from 'typebox';
import { CONTROL_CHARACTERS } from '../control-characters.js';

const MAX_LENGTH = 200;
const PATTERN = `^[^${CONTROL_CHARACTERS}]+$`;

/**
 * A user name as a request carries it: 1–200 characters (the users table's CHECK), none of them a
 * control character (never part of a name, and PostgreSQL text cannot hold NUL). What the name
 * then means is its canonical form (canonicalUserName); a new name must also pass checkNewUserName.
 */
export const UserName = Type.String({ minLength: 1, maxLength: MAX_LENGTH, pattern: PATTERN });

/**
 * The form a user name is stored, looked up and compared in: Unicode NFKC (fullwidth `ａｌｉｃｅ`,
 * ligatures and other compatibility forms become the plain letters they stand for), then without
 * white space at either end. Login, the CLI and the admin API all apply it, so `"alice "` and
 * `ａｌｉｃｅ` name `alice`; case is folded afterwards by the database (lower(), as the unique
 * index does).
 */
export function canonicalUserName(text: string): string {
  return text.normalize('NFKC').trim();
}

/**
 * The scripts a name's letters may come from: the Recommended Scripts of Unicode's UAX #31 (Table 4),
 * the scripts in everyday use. Others (historic ones, and ones like Cherokee whose letters copy
 * Latin ones) are refused.
 */
const ALLOWED_SCRIPTS = [
  'Arabic', 'Armenian', 'Bengali', 'Bopomofo', 'Cyrillic', 'Devanagari', 'Ethiopic', 'Georgian', 'Greek', 'Gujarati', 'Gurmukhi',
  'Han', 'Hangul', 'Hebrew', 'Hiragana', 'Kannada', 'Katakana', 'Khmer', 'Lao', 'Latin', 'Malayalam', 'Myanmar', 'Oriya',
  'Sinhala', 'Tamil', 'Telugu', 'Thaana', 'Thai', 'Tibetan',
] as const;
type Script = (typeof ALLOWED_SCRIPTS)[number];

const SCRIPT_OF: [Script, RegExp][] = ALLOWED_SCRIPTS.map((script) => [script, new RegExp(`^\\p{Script=${script}}$`, 'u')]);
/** Characters of no script of their own (digits 0–9, punctuation; combining accents take their base's). */
const NEUTRAL = /^[\p{Script=Common}\p{Script=Inherited}]$/u;
/** Letters, combining marks, decimal digits, and `.`, `_`, `-`, `@`, `+` (e-mail addresses are common names). */
const NAME_CHARACTER = /^[\p{L}\p{M}\p{Nd}._@+-]$/u;

/**
 * The scripts that may share one name: UTS #39's "highly restrictive" level. Japanese mixes Han,
 * Hiragana and Katakana, Chinese Han and Bopomofo, Korean Han and Hangul, each possibly with Latin;
 * none of those letters pass for another script's. Any other mix, Latin with Cyrillic or Greek
 * above all (`аlice` with a Cyrillic `а`), is how one name impersonates another.
 */
const MIXES: ReadonlySet<Script>[] = [
  new Set<Script>(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set<Script>(['Latin', 'Han', 'Bopomofo']),
  new Set<Script>(['Latin', 'Han', 'Hangul']),
];

export type UserNameCheck = { ok: true; value: string } | { ok: false; message: string };

/**
 * The rule for a name being created or given by a rename (admin API and CLI), on its canonical
 * form, which is what is stored: 1–200 characters; letters, combining marks and decimal digits,
 * and `.`, `_`, `-`, `@`, `+`; no white space, no invisible or control character; letters and
 * digits from one allowed script (or one of the mixes above). Names stored before the rule are
 * kept as they are (docs/authentication.md).
 */
export function checkNewUserName(text: string): UserNameCheck {
  const value = canonicalUserName(text);
  const characters = [...value];
  if (characters.length === 0) return { ok: false, message: 'must not be empty or only white space' };
  if (characters.length > MAX_LENGTH) return { ok: false, message: `must be at most ${MAX_LENGTH} characters` };
  const scripts = new Set<Script>();
  for (const character of characters) {
    if (!NAME_CHARACTER.test(character)) {
      return { ok: false, message: `may hold only letters, digits, ".", "_", "-", "@" and "+" (not ${describe(character)})` };
    }
    if (NEUTRAL.test(character)) continue;
    const script = SCRIPT_OF.find(([, pattern]) => pattern.test(character))?.[0];
    if (!script) return { ok: false, message: `holds ${describe(character)}, of a script names may not use` };
    scripts.add(script);
  }
  if (scripts.size > 1 && !MIXES.some((mix) => [...scripts].every((script) => mix.has(script)))) {
    return { ok: false, message: `must not mix scripts (it has ${[...scripts].join(' and ')} letters)` };
  }
  return { ok: true, value };
}

function describe(character: string): string {
  const code = `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(character) ? `"${character}", ${code}` : code;
}
