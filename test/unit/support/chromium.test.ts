/**
 * How `npm test` finds the browser its UI test drives: CHROMIUM_PATH, PATH, Debian's path, an install as root, or an
 * error that names the fix.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureChromium } from '../../support/chromium.js';

function fakeBinary(dir: string, name: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, '#!/bin/sh\nexit 0\n');
  chmodSync(file, 0o755);
  return file;
}

const empty = () => mkdtempSync(path.join(os.tmpdir(), 'chromium-'));
const quiet = { log: () => {}, install: () => false };

describe('ensureChromium', () => {
  it('takes CHROMIUM_PATH first', () => {
    const dir = empty();
    const chosen = fakeBinary(dir, 'my-chrome');
    fakeBinary(dir, 'chromium');

    expect(ensureChromium({ ...quiet, env: { CHROMIUM_PATH: chosen, PATH: dir } })).toBe(chosen);
  });

  it('refuses a CHROMIUM_PATH that is not an executable, naming the variable', () => {
    expect(() => ensureChromium({ ...quiet, env: { CHROMIUM_PATH: path.join(empty(), 'none') } })).toThrow(
      /^CHROMIUM_PATH: .*none is not an executable file$/,
    );
  });

  it('finds chromium, chromium-browser or google-chrome on PATH', () => {
    const dir = empty();
    const chrome = fakeBinary(dir, 'google-chrome');

    expect(ensureChromium({ ...quiet, env: { PATH: dir }, debianPath: path.join(dir, 'absent') })).toBe(chrome);
  });

  it('installs one when there is none, saying so, and uses it', () => {
    const dir = empty();
    const lines: string[] = [];

    const found = ensureChromium({
      env: { PATH: dir },
      debianPath: path.join(dir, 'absent'),
      log: (line) => lines.push(line),
      install: () => Boolean(fakeBinary(dir, 'chromium')),
    });

    expect(found).toBe(path.join(dir, 'chromium'));
    expect(lines).toEqual([
      expect.stringMatching(/^provision: no Chromium .*installing/),
      `provision: Chromium installed at ${found}`,
    ]);
  });

  it('says how to get one when it can neither find nor install it', () => {
    const dir = empty();

    expect(() => ensureChromium({ ...quiet, env: { PATH: dir }, debianPath: path.join(dir, 'absent') })).toThrow(
      /no Chromium for the browser test .*sudo apt-get install -y chromium.*or set CHROMIUM_PATH/,
    );
  });
});
