/**
 * Finds or builds `helm`, which test/unit/deploy/helm-chart.test.ts runs over the chart in deploy/helm. Same precedence as
 * the Temporal pieces: an environment variable (HELM), then PATH, then the cache, then `go install` into the cache
 * (minutes, once). The machines this project runs on reach the Go module proxy, not GitHub's release downloads.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { goInstall, onPath, type Found } from './provision-cluster.js';
import { cacheDir, ProvisionError } from './provision.js';

/** The Helm release built with `go install helm.sh/helm/v4/cmd/helm@…`: the newest v4 the Go proxy serves. */
export const HELM_VERSION = 'v4.3.2';

const HELM_MODULE = `helm.sh/helm/v4/cmd/helm@${HELM_VERSION}`;

type Log = (line: string) => void;
const defaultLog: Log = (line) => process.stderr.write(`[provision] ${line}\n`);

/** Where a build of HELM_VERSION is cached: `<cache>/helm/<version>/bin`. */
export function helmBinDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), 'helm', HELM_VERSION, 'bin');
}

/** `HELM`, else `helm` on PATH, else the cached build; undefined when none is there. Builds nothing. */
export function findHelm(env: NodeJS.ProcessEnv = process.env): Found | undefined {
  if (env.HELM) {
    if (!existsSync(env.HELM)) throw new ProvisionError(`HELM=${env.HELM} does not exist`);
    return { path: env.HELM, origin: 'HELM' };
  }
  const fromPath = onPath('helm', env);
  if (fromPath) return { path: fromPath, origin: 'PATH' };
  const cached = path.join(helmBinDir(env), 'helm');
  return existsSync(cached) ? { path: cached, origin: 'cache' } : undefined;
}

/** What is missing and how to get it, when neither a helm nor Go is at hand. */
export const HELM_MISSING =
  'no helm: set HELM to a helm binary, put `helm` on PATH, or install Go (https://go.dev/dl) so that ' +
  `\`go install ${HELM_MODULE}\` can build it (\`npm run provision\` does that once)`;

/** `findHelm`, else `go install` of HELM_VERSION into the cache. Throws a ProvisionError naming the fix. */
export function ensureHelm(options: { env?: NodeJS.ProcessEnv; log?: Log } = {}): Found {
  const env = options.env ?? process.env;
  const present = findHelm(env);
  if (present) return present;
  if (!onPath('go', env)) throw new ProvisionError(HELM_MISSING);
  const binDir = helmBinDir(env);
  goInstall([HELM_MODULE], binDir, env, options.log ?? defaultLog, `helm ${HELM_VERSION}`);
  const built = findHelm(env);
  if (!built) throw new ProvisionError(`go install did not produce helm in ${binDir}`);
  return { ...built, origin: 'go install' };
}
