/**
 * The Chromium the browser test drives, found or installed once per run by the global setup, as Temporal is:
 * `CHROMIUM_PATH`; `chromium`, `chromium-browser`, `google-chrome` or `google-chrome-stable` on PATH;
 * `/usr/bin/chromium`; as root on Debian or Ubuntu, `apt-get install -y chromium` (progress on stderr). Otherwise an
 * error that names the fix: no browser is downloaded behind the user's back and the test is never skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

/** Thrown when no Chromium can be found or installed; the message says how to get one. */
export class ChromiumNotFound extends Error {
  override name = 'ChromiumNotFound';
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where Debian's package puts it. */
const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** The first Chromium on PATH or at Debian's path; undefined when there is none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env, debianPath = DEBIAN_CHROMIUM): string | undefined {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of NAMES) {
    for (const dir of dirs) if (executable(path.join(dir, name))) return path.join(dir, name);
  }
  return executable(debianPath) ? debianPath : undefined;
}

/** Installs Debian's chromium when this process is root and apt-get is there; false when it cannot. */
function aptInstallChromium(env: NodeJS.ProcessEnv): boolean {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return false;
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const install = spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return install.status === 0;
}

export interface EnsureChromiumOptions {
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** Debian's path, looked at after PATH (tests point it elsewhere). */
  debianPath?: string;
  /** Installs a Chromium, true when it did (default: apt-get as root; tests pass their own). */
  install?: (env: NodeJS.ProcessEnv) => boolean;
}

/** Finds Chromium, installing Debian's package when this process is root and apt-get is there. */
export function ensureChromium(options: EnsureChromiumOptions = {}): string {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const debianPath = options.debianPath ?? DEBIAN_CHROMIUM;
  const install = options.install ?? aptInstallChromium;
  if (env.CHROMIUM_PATH) {
    if (!executable(env.CHROMIUM_PATH))
      throw new ChromiumNotFound(`CHROMIUM_PATH: ${env.CHROMIUM_PATH} is not an executable file`);
    return env.CHROMIUM_PATH;
  }
  const found = findChromium(env, debianPath);
  if (found) return found;
  log(
    "provision: no Chromium for the browser test; installing Debian's chromium (apt-get install -y chromium, about a minute, as root only)",
  );
  const installed = install(env) ? findChromium(env, debianPath) : undefined;
  if (installed) {
    log(`provision: Chromium installed at ${installed}`);
    return installed;
  }
  throw new ChromiumNotFound(
    'no Chromium for the browser test (test/e2e/temporal-ui.browser.test.ts): install one ' +
      '(Debian/Ubuntu: sudo apt-get install -y chromium; macOS: brew install --cask chromium) or set CHROMIUM_PATH to a Chromium or Chrome binary',
  );
}
