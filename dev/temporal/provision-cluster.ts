/**
 * Finds or builds what `npm run cluster` runs: the Temporal server (one binary, started once per service), its SQL
 * schema tool and schema files, the UI server, and PostgreSQL. Same precedence as the CLI in provision.ts: an
 * environment variable, then PATH, then the cache, then `go install` into the cache (minutes, once).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { cacheDir, ProvisionError } from './provision.js';

/** The server release docker-compose.yml ships (temporalio/server). */
export const TEMPORAL_SERVER_VERSION = 'v1.31.2';
/** The UI release docker-compose.yml ships (temporalio/ui). */
export const UI_SERVER_VERSION = 'v2.52.0';

type Log = (line: string) => void;
const defaultLog: Log = (line) => process.stderr.write(`[provision] ${line}\n`);

/** Where each piece of the cluster was found. `origin` says which rule found it (env, PATH, cache, go install). */
export interface ClusterBinaries {
  server: Found;
  sqlTool: Found;
  uiServer: Found;
  /** `schema/postgresql/v12` of the server release: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: Found;
  /** Directory holding `initdb`, `pg_ctl` and `postgres`. */
  postgresBinDir: Found;
}

export interface Found {
  path: string;
  origin: string;
}

interface Options {
  env?: NodeJS.ProcessEnv;
  log?: Log;
}

/** Everything the cluster needs, built or installed where missing. Throws a ProvisionError naming the fix. */
export function ensureClusterBinaries(options: Options = {}): ClusterBinaries {
  const env = options.env ?? process.env;
  const log = options.log ?? defaultLog;
  const serverHome = path.join(cacheDir(env), 'server', TEMPORAL_SERVER_VERSION);
  const { server, sqlTool } = ensureServerAndSqlTool(env, log, serverHome);
  return {
    server,
    sqlTool,
    schemaDir: ensureSchemaDir(env, log, serverHome),
    uiServer: ensureUiServer(env, log),
    postgresBinDir: ensurePostgres(env, log),
  };
}

/** The first `command` on PATH. */
export function onPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, command))) return path.join(dir, command);
  }
  return undefined;
}

/** An explicitly named file must exist: a typo is an error, not a silent fall-through to a build. */
function fromEnv(env: NodeJS.ProcessEnv, name: string): Found | undefined {
  const value = env[name];
  if (!value) return undefined;
  if (!existsSync(value)) throw new ProvisionError(`${name}=${value} does not exist`);
  return { path: value, origin: name };
}

/** A link `name` beside `target` in `dir`, so that scripts find the tool by the name the admin-tools image uses. */
function linkAs(dir: string, name: string, target: string): string {
  const link = path.join(dir, name);
  if (!existsSync(link)) {
    rmSync(link, { force: true });
    symlinkSync(target, link);
  }
  return link;
}

/** `go install -p 1 targets` into `binDir`, once more with GOSUMDB=off on failure; throws a ProvisionError naming the fix. */
export function goInstall(targets: string[], binDir: string, env: NodeJS.ProcessEnv, log: Log, what: string): void {
  const go = onPath('go', env);
  if (!go) {
    throw new ProvisionError(
      `no ${what}: install Go (https://go.dev/dl) so that \`go install ${targets.join(' ')}\` can build it, or set the variable naming a binary`,
    );
  }
  log(`building ${what} with go install into ${binDir} (several minutes on two cores, once)`);
  mkdirSync(binDir, { recursive: true });
  const started = Date.now();
  // -p 1: the server's dependency graph is large; two parallel compiles on two cores run out of memory before time.
  const goEnv = { ...env, GOTOOLCHAIN: 'local', GOBIN: binDir, GOFLAGS: `${env.GOFLAGS ?? ''} -trimpath`.trim() };
  const run = (extra: NodeJS.ProcessEnv) =>
    spawnSync(go, ['install', '-p', '1', ...targets], {
      env: { ...goEnv, ...extra },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  let result = run({});
  if (result.status !== 0) {
    log('go install failed; retrying with GOSUMDB=off in case the checksum database is unreachable from here');
    result = run({ GOSUMDB: 'off' });
  }
  if (result.status !== 0)
    throw new ProvisionError(`go install ${targets.join(' ')} failed (exit ${result.status}); see above`);
  log(`built ${what} in ${Math.round((Date.now() - started) / 1000)} s`);
}

/**
 * The server and the SQL tool come from one module and are built by one `go install` (shared dependencies):
 * TEMPORAL_SERVER_BIN / TEMPORAL_SQL_TOOL, else `temporal-server` / `temporal-sql-tool` on PATH, else the cache.
 */
function ensureServerAndSqlTool(env: NodeJS.ProcessEnv, log: Log, home: string): { server: Found; sqlTool: Found } {
  const binDir = path.join(home, 'bin');
  const find = () => ({
    server:
      fromEnv(env, 'TEMPORAL_SERVER_BIN') ??
      found(onPath('temporal-server', env), 'PATH') ??
      found(cachedFile(binDir, 'server'), 'cache'),
    sqlTool:
      fromEnv(env, 'TEMPORAL_SQL_TOOL') ??
      found(onPath('temporal-sql-tool', env), 'PATH') ??
      found(cachedFile(binDir, 'sql') && linkAs(binDir, 'temporal-sql-tool', 'sql'), 'cache'),
  });
  const first = find();
  if (first.server && first.sqlTool) return { server: first.server, sqlTool: first.sqlTool };
  goInstall(
    [
      `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`,
      `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
    ],
    binDir,
    env,
    log,
    `the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool`,
  );
  const built = find();
  if (!built.server || !built.sqlTool)
    throw new ProvisionError(`go install did not produce server and sql in ${binDir}`);
  return {
    server: built.server.origin === 'cache' ? { ...built.server, origin: 'go install' } : built.server,
    sqlTool: built.sqlTool.origin === 'cache' ? { ...built.sqlTool, origin: 'go install' } : built.sqlTool,
  };
}

function cachedFile(dir: string, name: string): string | undefined {
  const file = path.join(dir, name);
  return existsSync(file) ? file : undefined;
}

function found(file: string | undefined, origin: string): Found | undefined {
  return file ? { path: file, origin } : undefined;
}

function goModCache(env: NodeJS.ProcessEnv): string | undefined {
  if (env.GOMODCACHE) return env.GOMODCACHE;
  const go = onPath('go', env);
  if (!go) return undefined;
  const result = spawnSync(go, ['env', 'GOMODCACHE'], { env, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() || undefined : undefined;
}

/**
 * The PostgreSQL schema of the server release: TEMPORAL_SCHEMA_DIR, else a copy in the cache (taken from the Go
 * module cache after the build, so that `go clean -modcache` does not lose it).
 */
function ensureSchemaDir(env: NodeJS.ProcessEnv, log: Log, home: string): Found {
  const named = fromEnv(env, 'TEMPORAL_SCHEMA_DIR');
  if (named) return named;
  const cached = path.join(home, 'schema', 'postgresql', 'v12');
  if (existsSync(path.join(cached, 'temporal', 'versioned'))) return { path: cached, origin: 'cache' };
  const modCache = goModCache(env);
  const source =
    modCache && path.join(modCache, `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
  if (!source || !existsSync(source)) {
    throw new ProvisionError(
      `no PostgreSQL schema of the Temporal server ${TEMPORAL_SERVER_VERSION}: set TEMPORAL_SCHEMA_DIR to its schema/postgresql/v12, ` +
        `or run \`go mod download go.temporal.io/server@${TEMPORAL_SERVER_VERSION}\``,
    );
  }
  log(`copying the PostgreSQL schema from ${source} into ${cached}`);
  mkdirSync(path.dirname(cached), { recursive: true });
  cpSync(source, cached, { recursive: true });
  return { path: cached, origin: 'go module cache' };
}

/** The UI server: TEMPORAL_UI_SERVER_BIN, else `temporal-ui-server` on PATH, else the cache, else `go install`. */
function ensureUiServer(env: NodeJS.ProcessEnv, log: Log): Found {
  const named = fromEnv(env, 'TEMPORAL_UI_SERVER_BIN') ?? found(onPath('temporal-ui-server', env), 'PATH');
  if (named) return named;
  const binDir = path.join(cacheDir(env), 'ui-server', UI_SERVER_VERSION, 'bin');
  // The module's command is cmd/server, so go install names it `server`; the link says which server it is.
  const cached = () => cachedFile(binDir, 'server') && linkAs(binDir, 'temporal-ui-server', 'server');
  const hit = cached();
  if (hit) return { path: hit, origin: 'cache' };
  goInstall(
    [`github.com/temporalio/ui-server/v2/cmd/server@${UI_SERVER_VERSION}`],
    binDir,
    env,
    log,
    `the Temporal UI server ${UI_SERVER_VERSION}`,
  );
  const built = cached();
  if (!built) throw new ProvisionError(`go install did not produce the UI server in ${binDir}`);
  return { path: built, origin: 'go install' };
}

const postgresTools = ['initdb', 'pg_ctl', 'postgres'];

function postgresDir(dir: string): string | undefined {
  return postgresTools.every((tool) => existsSync(path.join(dir, tool))) ? dir : undefined;
}

/** Debian keeps each major version in /usr/lib/postgresql/<major>/bin, with only some links on PATH: newest first. */
function debianPostgres(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const dir = postgresDir(path.join(root, major, 'bin'));
    if (dir) return dir;
  }
  return undefined;
}

function findPostgres(env: NodeJS.ProcessEnv): Found | undefined {
  const pgCtl = onPath('pg_ctl', env);
  const besidePgCtl = pgCtl && postgresDir(path.dirname(realpathSync(pgCtl)));
  return found(besidePgCtl, 'PATH') ?? found(debianPostgres(), 'system');
}

/**
 * PostgreSQL's binaries: POSTGRES_BIN_DIR, else beside `pg_ctl` on PATH, else Debian's directory, else
 * `apt-get install postgresql` when running as root on Debian or Ubuntu.
 */
function ensurePostgres(env: NodeJS.ProcessEnv, log: Log): Found {
  if (env.POSTGRES_BIN_DIR) {
    if (!postgresDir(env.POSTGRES_BIN_DIR)) {
      throw new ProvisionError(`POSTGRES_BIN_DIR=${env.POSTGRES_BIN_DIR} does not hold ${postgresTools.join(', ')}`);
    }
    return { path: env.POSTGRES_BIN_DIR, origin: 'POSTGRES_BIN_DIR' };
  }
  const present = findPostgres(env);
  if (present) return present;
  const aptGet = onPath('apt-get', env);
  if (!aptGet || process.getuid?.() !== 0) {
    throw new ProvisionError(
      'no PostgreSQL: install it (Debian/Ubuntu: `sudo apt-get install postgresql`; elsewhere your package manager), ' +
        'or set POSTGRES_BIN_DIR to the directory holding initdb, pg_ctl and postgres',
    );
  }
  log('installing PostgreSQL with apt-get (the cluster stores its data in it)');
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync(aptGet, ['update', '-qq'], { env: aptEnv, stdio: ['ignore', 'inherit', 'inherit'] });
  const result = spawnSync(aptGet, ['install', '-y', '-qq', 'postgresql'], {
    env: aptEnv,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const installed = findPostgres(env);
  if (result.status !== 0 || !installed) throw new ProvisionError('apt-get install postgresql failed; see above');
  return { ...installed, origin: 'apt-get' };
}
