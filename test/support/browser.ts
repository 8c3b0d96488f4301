/**
 * A real browser for tests: the Chromium the global setup found or installed (test/support/chromium.ts), driven
 * headless by playwright-core. No browser download: a missing Chromium fails the run, it is not skipped.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { inject } from 'vitest';

/** Launches headless Chromium; close it with `browser.close()`. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: inject('chromiumPath'),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** `test-output/ui/<name>.png`, its folder created. */
export function screenshotPath(name: string): string {
  const dir = path.resolve('test-output', 'ui');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}
