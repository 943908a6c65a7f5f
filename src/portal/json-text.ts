/**
 * JSON text indented for reading, token by token: strings, numbers and key order stay exactly as
 * written (JSON.parse and stringify would turn 1.0 into 1 and move integer-like keys first), only
 * whitespace between tokens changes. The input is JSON already (a stored notification body).
 */
export function indentJsonText(text: string, unit = '  '): string {
  let out = '';
  let depth = 0;
  let inString = false;
  const newline = () => `\n${unit.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (inString) {
      out += char;
      if (char === '\\') out += text[++i] ?? '';
      else if (char === '"') inString = false;
      continue;
    }
    if (char === ' ' || char === '\n' || char === '\r' || char === '\t') continue;
    if (char === '"') {
      inString = true;
      out += char;
    } else if (char === '{' || char === '[') {
      // An empty object or array stays on one line.
      const rest = text.slice(i + 1).trimStart();
      if (rest[0] === (char === '{' ? '}' : ']')) {
        out += char + rest[0];
        i = text.length - rest.length;
        continue;
      }
      depth++;
      out += char + newline();
    } else if (char === '}' || char === ']') {
      depth--;
      out += newline() + char;
    } else if (char === ',') {
      out += char + newline();
    } else if (char === ':') {
      out += ': ';
    } else {
      out += char;
    }
  }
  return out;
}
