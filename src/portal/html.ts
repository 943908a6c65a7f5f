import { escape } from 'html-escaper';

/**
 * Server-rendered HTML as tagged templates: every interpolated value is escaped (html-escaper)
 * unless it is already Html, i.e. produced by this tag. Arrays are joined, null/undefined/false
 * render nothing, so `${cond && html`…`}` works.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escape(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += render(values[i]!) + strings[i + 1]!;
  return new Html(text);
}
