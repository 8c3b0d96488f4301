/**
 * A real browser for tests: Debian's Chromium (`/usr/bin/chromium`, installed by `apt-get install chromium`, as CI
 * does) driven headless by playwright-core. No browser download: a missing Chromium fails the test, it is not skipped.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Launches headless Chromium; close it with `browser.close()`. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
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
