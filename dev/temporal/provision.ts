/**
 * Finds or builds the two Temporal servers this project runs on: the dev server (`temporal` CLI, with the UI)
 * and the time-skipping test server. Each step prints what it does; the first build takes minutes, later runs
 * reuse a cache outside the repository so that fresh clones (CI) do not build again.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** temporal CLI release built with `go install` where no binary is at hand. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
/** io.temporal:temporal-test-server release fetched from Maven Central. */
export const TEST_SERVER_VERSION = '1.33.0';

/** Where a server comes from: a path to run, or the SDK's own download as the last resort. */
export type ServerSource = { type: 'existing-path'; path: string; origin: string } | { type: 'sdk-download' };

export class ProvisionError extends Error {
  override name = 'ProvisionError';
}

type Log = (line: string) => void;
const defaultLog: Log = (line) => process.stderr.write(`[provision] ${line}\n`);

/** The cache shared by every clone on this machine: `$EXPECTATIONS_WATCHER_CACHE` or `~/.cache/expectations-watcher`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EXPECTATIONS_WATCHER_CACHE) return path.resolve(env.EXPECTATIONS_WATCHER_CACHE);
  const base = env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache');
  return path.join(base, 'expectations-watcher');
}

function onPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, command);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function runStreaming(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv }): number {
  const result = spawnSync(command, args, { ...options, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.error) return -1;
  return result.status ?? -1;
}

/**
 * The dev server: `TEMPORAL_CLI`, else `temporal` on PATH, else a cached build, else `go install` into the cache,
 * else the SDK's download (for laptops with internet and no Go).
 */
export function ensureDevServer(
  options: { env?: NodeJS.ProcessEnv; log?: Log; allowDownload?: boolean } = {},
): ServerSource {
  const env = options.env ?? process.env;
  const log = options.log ?? defaultLog;
  if (env.TEMPORAL_CLI) {
    if (!existsSync(env.TEMPORAL_CLI)) throw new ProvisionError(`TEMPORAL_CLI=${env.TEMPORAL_CLI} does not exist`);
    return { type: 'existing-path', path: env.TEMPORAL_CLI, origin: 'TEMPORAL_CLI' };
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return { type: 'existing-path', path: fromPath, origin: 'PATH' };

  const binDir = path.join(cacheDir(env), 'cli', TEMPORAL_CLI_VERSION, 'bin');
  const cached = path.join(binDir, 'temporal');
  if (existsSync(cached)) return { type: 'existing-path', path: cached, origin: 'cache' };

  const go = onPath('go', env);
  if (go) {
    log(`building the temporal CLI ${TEMPORAL_CLI_VERSION} with go install into ${binDir} (several minutes, once)`);
    mkdirSync(binDir, { recursive: true });
    const started = Date.now();
    const goEnv = { ...env, GOTOOLCHAIN: 'local', GOBIN: binDir, GOFLAGS: `${env.GOFLAGS ?? ''} -trimpath`.trim() };
    const target = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
    let status = runStreaming(go, ['install', target], { env: goEnv });
    if (status !== 0 && !existsSync(cached)) {
      log('go install failed; retrying with GOSUMDB=off in case the checksum database is unreachable from here');
      status = runStreaming(go, ['install', target], { env: { ...goEnv, GOSUMDB: 'off' } });
    }
    if (status === 0 && existsSync(cached)) {
      log(`built ${cached} in ${Math.round((Date.now() - started) / 1000)} s`);
      return { type: 'existing-path', path: cached, origin: 'go install' };
    }
    log('go install did not produce a temporal binary');
  }
  return sdkDownloadOrFail(options.allowDownload, log, DEV_SERVER_LAST_RESORT);
}

/** What a server's last resort says: the line logged before the SDK's download, the error when it is not allowed. */
interface LastResort {
  fallingBack: string;
  missing: string;
}

const DEV_SERVER_LAST_RESORT: LastResort = {
  fallingBack: 'no temporal CLI and no Go toolchain: falling back to the Temporal SDK download of the dev server',
  missing:
    'no Temporal dev server: set TEMPORAL_CLI to a temporal binary, put `temporal` on PATH, or install Go ' +
    '(https://go.dev/dl) so that `go install github.com/temporalio/cli/cmd/temporal@' +
    TEMPORAL_CLI_VERSION +
    '` can build it',
};

const TEST_SERVER_LAST_RESORT: LastResort = {
  fallingBack: 'no Java and Maven: falling back to the Temporal SDK download of the test server',
  missing:
    'no Temporal time-skipping test server: set TEMPORAL_TEST_SERVER to an executable, or install a JDK (17+) ' +
    'and Maven so that io.temporal:temporal-test-server can be fetched from Maven Central',
};

/** The last step of both ensure* functions: the SDK's download unless `allowDownload` is false, else a ProvisionError. */
function sdkDownloadOrFail(allowDownload: boolean | undefined, log: Log, says: LastResort): ServerSource {
  if (allowDownload === false) throw new ProvisionError(says.missing);
  log(says.fallingBack);
  return { type: 'sdk-download' };
}

const TEST_SERVER_POM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.expectations-watcher</groupId>
  <artifactId>temporal-test-server-classpath</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${TEST_SERVER_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`;

/**
 * The time-skipping test server: `TEMPORAL_TEST_SERVER`, else a cached Maven classpath behind an `exec java` wrapper
 * (materialised with `mvn dependency:copy-dependencies` on first use), else the SDK's download.
 */
export async function ensureTestServer(
  options: { env?: NodeJS.ProcessEnv; log?: Log; allowDownload?: boolean } = {},
): Promise<ServerSource> {
  const env = options.env ?? process.env;
  const log = options.log ?? defaultLog;
  if (env.TEMPORAL_TEST_SERVER) {
    if (!existsSync(env.TEMPORAL_TEST_SERVER)) {
      throw new ProvisionError(`TEMPORAL_TEST_SERVER=${env.TEMPORAL_TEST_SERVER} does not exist`);
    }
    return { type: 'existing-path', path: env.TEMPORAL_TEST_SERVER, origin: 'TEMPORAL_TEST_SERVER' };
  }
  const home = path.join(cacheDir(env), 'test-server', TEST_SERVER_VERSION);
  const wrapper = path.join(home, 'temporal-test-server');
  if (existsSync(wrapper)) return { type: 'existing-path', path: wrapper, origin: 'cache' };

  const java = onPath('java', env);
  const mvn = onPath('mvn', env);
  if (java && mvn) {
    const lib = path.join(home, 'lib');
    log(
      `fetching io.temporal:temporal-test-server:${TEST_SERVER_VERSION} and its classpath from Maven Central into ${lib}`,
    );
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'pom.xml'), TEST_SERVER_POM);
    const status = runStreaming(
      mvn,
      ['-q', '-B', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${lib}`],
      { cwd: home, env },
    );
    if (status === 0 && existsSync(lib) && readdirSync(lib).some((f) => f.startsWith('temporal-test-server'))) {
      await writeTestServerWrapper(home, java, log);
      return { type: 'existing-path', path: wrapper, origin: 'maven' };
    }
    log('mvn dependency:copy-dependencies failed');
  }
  return sdkDownloadOrFail(options.allowDownload, log, TEST_SERVER_LAST_RESORT);
}

/**
 * Writes the `exec java` wrapper, after a class-data-sharing archive that keeps a cold start well inside the SDK's
 * five-second window. The wrapper passes on exactly the arguments it gets.
 */
async function writeTestServerWrapper(home: string, java: string, log: Log): Promise<void> {
  const classpath = path.join(home, 'lib', '*');
  const archive = path.join(home, 'test-server.jsa');
  const jvmFlags = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xss512k'];
  log('recording a class-data-sharing archive for a fast JVM start');
  await recordClassArchive(java, [...jvmFlags, `-XX:ArchiveClassesAtExit=${archive}`, '-cp', classpath], log);
  const share = existsSync(archive) ? ` -XX:SharedArchiveFile='${archive}' -Xshare:auto` : '';
  const script = `#!/bin/sh\n# Written by expectations-watcher provisioning: Temporal's time-skipping test server.\nexec '${java}' ${jvmFlags.join(' ')}${share} -cp '${classpath}' io.temporal.testserver.TestServer "$@"\n`;
  const wrapper = path.join(home, 'temporal-test-server');
  writeFileSync(wrapper, script);
  chmodSync(wrapper, 0o755);
}

/** Starts the server once on a free port, waits until it listens, and stops it so that the JVM dumps its archive. */
async function recordClassArchive(java: string, args: string[], log: Log): Promise<void> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(java, [...args, 'io.temporal.testserver.TestServer', String(port)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listening = await waitForPort(port, 60_000);
  child.kill('SIGTERM');
  await Promise.race([exited, delay(30_000)]);
  log(listening ? 'class-data-sharing archive recorded' : 'the test server did not listen; no archive recorded');
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves true once something accepts TCP connections on 127.0.0.1:port, false at the timeout. */
export async function waitForPort(port: number, timeoutMs: number, host = '127.0.0.1'): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return true;
    await delay(200);
  }
  return false;
}
