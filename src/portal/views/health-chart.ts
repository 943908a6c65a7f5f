import type { HealthBucket, WebhookHealth } from '../../delivery/history/attempt-health.js';
import { html, type Html } from '../html.js';

/**
 * A webhook's health, drawn on the server as SVG (no chart script reaches the browser): attempts
 * per bucket stacked by outcome, and the answered attempts' response time (p50, p95), for each
 * window. Each chart is one image (role img, a title and a description with the totals) and its
 * numbers are a table in a details element, for screen readers and for copying. Colours come as SVG
 * presentation attributes (the CSP allows no inline style); the legend names each one in words.
 */

const WIDTH = 720;
const HEIGHT = 180;
const LEFT = 48;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 26;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

const OUTCOMES = [
  { key: 'succeeded', label: 'succeeded (2xx)', colour: '#1a7f37' },
  { key: 'failed', label: 'failed (answered, not 2xx)', colour: '#cf222e' },
  { key: 'noAnswer', label: 'no answer (timeout, connection)', colour: '#9a6700' },
] as const;
const LINES = [
  { key: 'p50', label: 'p50 (median)', colour: '#0b57d0', dash: '' },
  { key: 'p95', label: 'p95', colour: '#8250df', dash: '6 4' },
] as const;

/** 1, 2, 4, 6, 8, 10 × 10^n (at least 2): an axis top at or above `value` whose half, the middle line, is a whole number too. */
function niceMax(value: number): number {
  if (value <= 2) return 2;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 4, 6, 8, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const pad = (n: number) => String(n).padStart(2, '0');
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
/** A bucket's start in UTC: `14:00` for hours, `Mon 27 06:00` for longer buckets. */
function bucketName(start: Date, hourly: boolean): string {
  const time = `${pad(start.getUTCHours())}:00`;
  return hourly ? time : `${DAYS[start.getUTCDay()]} ${start.getUTCDate()} ${time}`;
}
/** Axis labels: every 6th hour, or each day's start. */
function axisLabel(start: Date, hourly: boolean): string | undefined {
  if (hourly) return start.getUTCHours() % 6 === 0 ? `${pad(start.getUTCHours())}:00` : undefined;
  return start.getUTCHours() === 0 ? `${DAYS[start.getUTCDay()]} ${start.getUTCDate()}` : undefined;
}

const total = (bucket: Pick<HealthBucket, 'succeeded' | 'failed' | 'noAnswer'>) => bucket.succeeded + bucket.failed + bucket.noAnswer;
const ms = (value: number | null) => (value === null ? '—' : `${value} ms`);

function frame(id: string, title: string, desc: string, body: Html, yMax: number, unit: string, health: WebhookHealth): Html {
  const hourly = health.window.bucketMs === 3_600_000;
  const step = PLOT_W / health.buckets.length;
  return html`<svg class="health-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-labelledby="${id}-title ${id}-desc" focusable="false">
  <title id="${id}-title">${title}</title>
  <desc id="${id}-desc">${desc}</desc>
  <g font-size="11" fill="#4b5563">
    <text x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${yMax}${unit}</text>
    <text x="${LEFT - 6}" y="${TOP + PLOT_H / 2 + 4}" text-anchor="end">${yMax / 2}${unit}</text>
    <text x="${LEFT - 6}" y="${TOP + PLOT_H + 4}" text-anchor="end">0</text>
    ${health.buckets.map((bucket, index) => {
      const label = axisLabel(bucket.start, hourly);
      return label && html`<text x="${(LEFT + index * step).toFixed(1)}" y="${HEIGHT - 8}">${label}</text>`;
    })}
  </g>
  <g stroke="#d0d7de" stroke-width="1">
    <line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${TOP}" y2="${TOP}"/>
    <line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${TOP + PLOT_H / 2}" y2="${TOP + PLOT_H / 2}"/>
    <line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${TOP + PLOT_H}" y2="${TOP + PLOT_H}" stroke="#6e7781"/>
  </g>
  ${body}
</svg>`;
}

function attemptsChart(id: string, health: WebhookHealth): Html {
  const yMax = niceMax(Math.max(...health.buckets.map(total)));
  const step = PLOT_W / health.buckets.length;
  const barWidth = Math.max(1, step * 0.8);
  const scale = PLOT_H / yMax;
  const bars = health.buckets.map((bucket, index) => {
    let y = TOP + PLOT_H;
    const x = (LEFT + index * step + (step - barWidth) / 2).toFixed(1);
    return OUTCOMES.map((outcome) => {
      const count = bucket[outcome.key];
      if (count === 0) return null;
      const height = count * scale;
      y -= height;
      return html`<rect x="${x}" y="${y.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${height.toFixed(1)}" fill="${outcome.colour}"/>`;
    });
  });
  const t = health.total;
  const desc = `${total(t)} attempts: ${t.succeeded} succeeded, ${t.failed} failed, ${t.noAnswer} without an answer; per ${health.window.bucketLabel}, the numbers are in the table below.`;
  return frame(id, `Attempts per ${health.window.bucketLabel} by outcome, ${health.window.label.toLowerCase()}`, desc, html`<g>${bars}</g>`, yMax, '', health);
}

function responseChart(id: string, health: WebhookHealth): Html {
  const yMax = niceMax(Math.max(0, ...health.buckets.map((bucket) => bucket.p95 ?? 0)));
  const step = PLOT_W / health.buckets.length;
  const scale = PLOT_H / yMax;
  const lines = LINES.map((line) => {
    // A line per run of buckets with answers: no answer in a bucket leaves a gap, not a zero.
    const runs: string[][] = [[]];
    health.buckets.forEach((bucket, index) => {
      const value = bucket[line.key];
      if (value === null) {
        if (runs.at(-1)!.length > 0) runs.push([]);
        return;
      }
      runs.at(-1)!.push(`${(LEFT + index * step + step / 2).toFixed(1)},${(TOP + PLOT_H - value * scale).toFixed(1)}`);
    });
    return runs.filter((run) => run.length > 0).map((run) => run.length === 1
      ? html`<circle cx="${run[0]!.split(',')[0]!}" cy="${run[0]!.split(',')[1]!}" r="3" fill="${line.colour}"/>`
      : html`<polyline points="${run.join(' ')}" fill="none" stroke="${line.colour}" stroke-width="2" ${line.dash && html`stroke-dasharray="${line.dash}"`}/>`);
  });
  const desc = `Over the window, answered attempts took ${ms(health.total.p50)} at the median (p50) and ${ms(health.total.p95)} at the 95th percentile (p95); per ${health.window.bucketLabel} in the table below.`;
  return frame(id, `Response time per ${health.window.bucketLabel}, ${health.window.label.toLowerCase()}`, desc, html`<g>${lines}</g>`, yMax, ' ms', health);
}

/** A legend's sample: a box for a bar, a line (dashed or not) for a line. */
function swatch(colour: string, line?: { dash: string }): Html {
  return html`<svg width="18" height="14" viewBox="0 0 18 14" aria-hidden="true" focusable="false">${line
    ? html`<line x1="0" x2="18" y1="7" y2="7" stroke="${colour}" stroke-width="3" ${line.dash && html`stroke-dasharray="4 2"`}/>`
    : html`<rect width="14" height="14" fill="${colour}"/>`}</svg>`;
}

function numbersTable(health: WebhookHealth): Html {
  const hourly = health.window.bucketMs === 3_600_000;
  return html`<details class="health-numbers">
  <summary>The numbers, per ${health.window.bucketLabel}</summary>
  <table>
    <caption>Attempts and response time per ${health.window.bucketLabel} (UTC, ${health.window.label.toLowerCase()})</caption>
    <thead><tr><th scope="col">${hourly ? 'Hour' : 'From'} (UTC)</th><th scope="col">Succeeded</th><th scope="col">Failed</th><th scope="col">No answer</th><th scope="col">p50</th><th scope="col">p95</th></tr></thead>
    <tbody>${health.buckets.map((bucket) => html`<tr>
      <th scope="row"><time datetime="${bucket.start.toISOString()}">${bucketName(bucket.start, hourly)}</time></th>
      <td>${bucket.succeeded}</td><td>${bucket.failed}</td><td>${bucket.noAnswer}</td><td>${ms(bucket.p50)}</td><td>${ms(bucket.p95)}</td>
    </tr>`)}</tbody>
    <tfoot><tr><th scope="row">Whole window</th><td>${health.total.succeeded}</td><td>${health.total.failed}</td><td>${health.total.noAnswer}</td><td>${ms(health.total.p50)}</td><td>${ms(health.total.p95)}</td></tr></tfoot>
  </table>
</details>`;
}

/** The "Health" section of a webhook's page: each window's two charts, legend and table. */
export function healthSection(windows: WebhookHealth[]): Html {
  return html`<section class="health" aria-labelledby="health-heading">
<h2 id="health-heading">Health</h2>
<p class="hint">Delivery attempts that started in each window, by outcome, and how long the receiver took to answer (test notifications are not counted). Times are UTC.</p>
<ul class="legend">
  ${OUTCOMES.map((outcome) => html`<li>${swatch(outcome.colour)} ${outcome.label}</li>`)}
  ${LINES.map((line) => html`<li>${swatch(line.colour, line)} ${line.label} response time</li>`)}
</ul>
${windows.map((health) => html`
<h3>${health.window.label} <span class="hint">(per ${health.window.bucketLabel})</span></h3>
${attemptsChart(`health-${health.window.key}-attempts`, health)}
${responseChart(`health-${health.window.key}-time`, health)}
${numbersTable(health)}`)}
</section>`;
}
