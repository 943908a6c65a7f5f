/** The control characters a name may not hold (C0 and DEL), as a regular-expression class body. */
export const CONTROL_CHARACTERS = '\\u0000-\\u001f\\u007f';
