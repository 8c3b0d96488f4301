/**
 * A PostgreSQL server of our own: its data directory under the watcher's data directory (created by initdb once and
 * kept), listening on 127.0.0.1 only, on a port chosen per start. PostgreSQL refuses to run as root, so as root it
 * runs as the `postgres` user (created as a system user where missing) and owns its directory.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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
  const created = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', osUser], { encoding: 'utf8' });
  const ids = id();
  if (created.status !== 0 || !ids) throw new PostgresError(`cannot create the system user ${osUser} for PostgreSQL: ${created.stderr}`);
  return ids;
}

function failed(what: string, result: SpawnSyncReturns<string>, logFile?: string): PostgresError {
  const output = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim();
  return new PostgresError(`${what} failed (exit ${result.status})${output ? `: ${output}` : ''}${logFile ? `; see ${logFile}` : ''}`);
}

/** Starts PostgreSQL on the data directory, running initdb first when the directory holds no cluster yet. */
export async function startPostgres(options: PostgresOptions): Promise<Postgres> {
  const user = options.user ?? 'temporal';
  const password = options.password ?? 'temporal';
  const osUser = options.osUser ?? 'postgres';
  const tool = (name: string) => path.join(options.binDir, name);
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

  const created = !existsSync(path.join(options.dataDir, 'PG_VERSION'));
  if (created) {
    const pwfile = path.join(options.dataDir, '..', 'postgres.pwfile');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (owner) chownSync(pwfile, owner.uid, owner.gid);
    const init = runAs(osUser, tool('initdb'), [
      '-D',
      options.dataDir,
      '-U',
      user,
      `--pwfile=${pwfile}`,
      '--auth-host=scram-sha-256',
      '--auth-local=peer',
      '--encoding=UTF8',
      '--locale=C',
    ]);
    spawnSync('rm', ['-f', pwfile]);
    if (init.status !== 0) throw failed('initdb', init);
  }

  // A PostgreSQL left running by a run that was killed holds the directory: stop it, it is ours.
  if (runAs(osUser, tool('pg_ctl'), ['status', '-D', options.dataDir]).status === 0) {
    runAs(osUser, tool('pg_ctl'), ['stop', '-D', options.dataDir, '-m', 'fast', '-w']);
  }
  // TCP on the loopback only, no Unix socket (its path would have to fit 107 bytes and a directory we own).
  const serverOptions = `-p ${options.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;
  const start = runAs(osUser, tool('pg_ctl'), ['start', '-D', options.dataDir, '-l', options.logFile, '-w', '-t', '60', '-o', serverOptions]);
  if (start.status !== 0) throw failed('pg_ctl start', start, options.logFile);

  return {
    host: '127.0.0.1',
    port: options.port,
    user,
    password,
    dataDir: options.dataDir,
    created,
    stop: () => {
      const stop = runAs(osUser, tool('pg_ctl'), ['stop', '-D', options.dataDir, '-m', 'fast', '-w', '-t', '60']);
      return stop.status === 0 ? Promise.resolve() : Promise.reject(failed('pg_ctl stop', stop, options.logFile));
    },
  };
}
