import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

/** A small phone's viewport width, in CSS pixels. */
export const PHONE_WIDTH = 390;

/**
 * The page at a phone's width scrolls only down: its document is no wider than the viewport (a
 * table scrolls inside its own box, long ids wrap). The viewport is put back afterwards.
 */
export async function assertNoSidewaysScroll(page: Page, name: string, width = PHONE_WIDTH): Promise<void> {
  const before = page.viewportSize();
  await page.setViewportSize({ width, height: 844 });
  const scrollWidth = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
  if (before) await page.setViewportSize(before);
  assert.ok(scrollWidth <= width, `${name} is ${scrollWidth} px wide at a ${width} px viewport: it scrolls sideways`);
}
