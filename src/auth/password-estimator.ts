import type { ZxcvbnFactory, ZxcvbnResult } from '@zxcvbn-ts/core';

/*
 * zxcvbn-ts with its common-password list and English dictionaries, all shipped in the npm
 * packages: nothing here reaches the network. It runs in the estimator's worker thread
 * (password-strength.worker.ts), never on the event loop that serves requests.
 */

/**
 * The estimator sees only this many leading characters. zxcvbn's matchers grow much faster than
 * linearly with the length (measured here: up to ≈0.1 s for 64 characters of l33t-looking repeats
 * on a loaded machine, seconds for 1 024), and a password whose first 64 characters are strong is
 * strong. A longer password is never refused for what comes after them.
 */
export const ESTIMATED_PREFIX_LENGTH = 64;
/** zxcvbn's default (100) made a 32-character password of l33t characters cost ≈0.5 s; 10 keeps the common substitutions. */
const L33T_MAX_SUBSTITUTIONS = 10;

export interface Verdict {
  /** The whole password is one entry of the common-password list, or its reversed, l33t or re-cased form. */
  common: boolean;
  /** zxcvbn's score, 0–4. */
  score: number;
  warning: string | null;
  suggestions: string[];
}

export async function judgePassword(password: string, userInputs: string[]): Promise<Verdict> {
  const result = (await estimator()).check(password.slice(0, ESTIMATED_PREFIX_LENGTH), userInputs);
  return { common: isCommonPassword(result), score: result.score, warning: result.feedback.warning, suggestions: result.feedback.suggestions };
}

function isCommonPassword(result: ZxcvbnResult): boolean {
  const [only, ...rest] = result.sequence;
  return rest.length === 0 && only?.pattern === 'dictionary' && only.dictionaryName === 'passwords-common';
}

let factory: Promise<ZxcvbnFactory> | undefined;

/** Built on first use: importing the dictionaries and ranking them takes ≈0.4 s and some 20 MB. */
function estimator(): Promise<ZxcvbnFactory> {
  factory ??= (async () => {
    const [{ ZxcvbnFactory }, common, en] = await Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common'), import('@zxcvbn-ts/language-en')]);
    return new ZxcvbnFactory({
      dictionary: { ...common.dictionary, ...en.dictionary },
      graphs: common.adjacencyGraphs,
      translations: en.translations,
      maxLength: ESTIMATED_PREFIX_LENGTH,
      l33tMaxSubstitutions: L33T_MAX_SUBSTITUTIONS,
    });
  })();
  return factory;
}
