/**
 * A PostgreSQL server of our own: its data directory under the watcher's data directory (created by initdb once and
 * kept), listening on 127.0.0.1 only, on a port chosen per start. PostgreSQL refuses to run as root, so as root it
 * runs as the `postgres` user (created as a system user where missing) and owns its directory. The postmaster is our
 * child (process.ts), not a daemon of pg_ctl's: it ends with us, and a pid file it left behind is cleared.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { logTail, managedProcess } from './process.js';

export interface PostgresOptions {
  /** Binaries: initdb, pg_ctl, postgres. */
  binDir: string;
  dataDir: string;
  port: number;
  logFile: string;
  /** Superuser created by initdb; the Temporal server and the schema tool log in with it. */
  user?: string;
  password?: string;
  /** OS user to run as when we are root (default `postgres`). */
  osUser?: string;
}

/** A running PostgreSQL. `stop()` shuts it down (fast mode: open sessions are ended, data is flushed). */
export interface Postgres {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly dataDir: string;
  /** True when this start ran initdb (a new, empty cluster). */
  readonly created: boolean;
  /** The postmaster's pid; undefined while it is stopped. */
  readonly pid: number | undefined;
  /** Starts it again, on the same directory and port, after `stop()` (the fault tests). */
  start(): Promise<void>;
  /** Fast shutdown (open sessions are ended, data is flushed); resolves once the postmaster has exited. */
  stop(): Promise<void>;
}

export class PostgresError extends Error {
  override name = 'PostgresError';
}

const isRoot = () => process.getuid?.() === 0;

/** Runs a PostgreSQL tool, as the OS user when we are root. */
function runAs(osUser: string, command: string, args: string[]): SpawnSyncReturns<string> {
  const [file, argv] = isRoot() ? ['runuser', ['-u', osUser, '--', command, ...args]] : [command, args];
  return spawnSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function ensureOsUser(osUser: string): { uid: number; gid: number } | undefined {
  if (!isRoot()) return undefined;
  const id = () => {
    const uid = spawnSync('id', ['-u', osUser], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', osUser], { encoding: 'utf8' });
    return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout), gid: Number(gid.stdout) } : undefined;
  };
  const existing = id();
  if (existing) return existing;
  const created = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', osUser], {
    encoding: 'utf8',
  });
  const ids = id();
  if (created.status !== 0 || !ids)
    throw new PostgresError(`cannot create the system user ${osUser} for PostgreSQL: ${created.stderr}`);
  return ids;
}

function failed(what: string, result: SpawnSyncReturns<string>, logFile?: string): PostgresError {
  const output = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim();
  return new PostgresError(
    `${what} failed (exit ${result.status})${output ? `: ${output}` : ''}${logFile ? `; see ${logFile}` : ''}`,
  );
}

/** Starts PostgreSQL on the data directory, running initdb first when the directory holds no cluster yet. */
export async function startPostgres(options: PostgresOptions): Promise<Postgres> {
  const user = options.user ?? 'temporal';
  const password = options.password ?? 'temporal';
  const osUser = options.osUser ?? 'postgres';
  const tool = (name: string) => path.join(options.binDir, name);
  const owner = prepareDirectories(options, osUser);
  const created = !existsSync(path.join(options.dataDir, 'PG_VERSION'));
  if (created) initDatabase(options, { osUser, owner, user, password });

  const server = managedProcess({
    name: 'postgres',
    command: tool('postgres'),
    // TCP on the loopback only, no Unix socket (its path would have to fit 107 bytes and a directory we own).
    args: [
      '-D',
      options.dataDir,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ],
    logFile: options.logFile,
    port: options.port,
    // Immediate shutdown once we are gone: its children end too, and the next start recovers from the WAL.
    deathSignal: 'SIGQUIT',
    ...(owner ? { user: owner } : {}),
  });
  const start = async () => {
    clearStalePostmasterPid(options.dataDir);
    // A PostgreSQL still running on the directory (started by hand, or by an older version of this file): ours, stopped.
    if (runAs(osUser, tool('pg_ctl'), ['status', '-D', options.dataDir]).status === 0) {
      runAs(osUser, tool('pg_ctl'), ['stop', '-D', options.dataDir, '-m', 'fast', '-w', '-t', '60']);
    }
    await server.start();
    if (!(await acceptsConnections(options.dataDir, server, 60_000))) {
      await server.stop('SIGKILL');
      throw new PostgresError(
        `PostgreSQL did not become ready within 60 s; its log, ${options.logFile}, ends:\n${logTail(options.logFile)}`,
      );
    }
  };
  await start();

  return {
    host: '127.0.0.1',
    port: options.port,
    user,
    password,
    dataDir: options.dataDir,
    created,
    get pid() {
      return server.pid;
    },
    start,
    stop: () => server.stop('SIGINT', 60_000),
  };
}

type Owner = ReturnType<typeof ensureOsUser>;

/** The data and log directories, owned by the OS user PostgreSQL runs as, and reachable by it. */
function prepareDirectories(options: PostgresOptions, osUser: string): Owner {
  const owner = ensureOsUser(osUser);
  for (const dir of [options.dataDir, path.dirname(options.logFile)]) {
    mkdirSync(path.dirname(dir), { recursive: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (owner) chownSync(dir, owner.uid, owner.gid);
  }
  if (owner) {
    // Every parent must be searchable by the OS user, or initdb fails with a bare "permission denied".
    const reach = runAs(osUser, 'test', ['-w', options.dataDir]);
    if (reach.status !== 0) {
      throw new PostgresError(
        `the ${osUser} user cannot reach ${options.dataDir} (a parent directory is not searchable by others); use a WATCHER_DATA_DIR outside it`,
      );
    }
  }
  return owner;
}

/** initdb on an empty data directory: the superuser `user` with `password`, over scram on TCP. */
function initDatabase(
  options: PostgresOptions,
  as: { osUser: string; owner: Owner; user: string; password: string },
): void {
  const pwfile = path.join(options.dataDir, '..', 'postgres.pwfile');
  writeFileSync(pwfile, `${as.password}\n`, { mode: 0o600 });
  if (as.owner) chownSync(pwfile, as.owner.uid, as.owner.gid);
  const init = runAs(as.osUser, path.join(options.binDir, 'initdb'), [
    '-D',
    options.dataDir,
    '-U',
    as.user,
    `--pwfile=${pwfile}`,
    '--auth-host=scram-sha-256',
    '--auth-local=peer',
    '--encoding=UTF8',
    '--locale=C',
  ]);
  spawnSync('rm', ['-f', pwfile]);
  if (init.status !== 0) throw failed('initdb', init);
}

/** The postmaster's lock file: its pid on the first line, its state (`ready` once it accepts connections) on the eighth. */
const lockFile = (dataDir: string) => path.join(dataDir, 'postmaster.pid');

/** Resolves true once the postmaster of `server` says in its lock file that it is ready (as `pg_ctl start -w` waits). */
async function acceptsConnections(
  dataDir: string,
  server: { pid: number | undefined },
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && server.pid !== undefined) {
    const lines = existsSync(lockFile(dataDir)) ? readFileSync(lockFile(dataDir), 'utf8').split('\n') : [];
    if (lines[0]?.trim() === String(server.pid) && lines[7]?.trim() === 'ready') return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/**
 * Removes the lock file of a postmaster that is gone (killed with the machine, or by SIGKILL), or whose pid now
 * belongs to another program: PostgreSQL would refuse to start on a pid it finds alive. True when it removed one.
 */
export function clearStalePostmasterPid(dataDir: string): boolean {
  const file = lockFile(dataDir);
  if (!existsSync(file)) return false;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && isPostgres(pid)) return false;
  rmSync(file, { force: true });
  return true;
}

/** Whether `pid` is a running PostgreSQL process (on Linux by its name in /proc; elsewhere: whether it runs). */
function isPostgres(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  } catch {
    return false;
  }
}
