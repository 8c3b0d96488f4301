/**
 * docker-compose.yml, the Dockerfile and .dockerignore, read as data: no Docker engine runs here, so these tests hold
 * the stack to the code it runs (search attributes, configuration schema, entry points and their imports).
 */
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SearchAttributeType } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { principalsFileSchema } from '../../../src/auth/principals.js';
import { defaultMaxCachedWorkflows, loadConfig } from '../../../src/config.js';
import { allSearchAttributes } from '../../../workflows/search-attributes.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

// ---------------------------------------------------------------------------------------------------------------
// docker-compose.yml as compose reads it: YAML with merge keys, then `${VAR:-default}` interpolation.

interface Healthcheck {
  test?: string | string[];
  disable?: boolean;
}
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: Healthcheck;
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
  volumes?: (string | { type?: string; source?: string; target: string })[];
  secrets?: (string | { source: string; target?: string })[];
  container_name?: string;
  restart?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  secrets?: Record<string, { file?: string }>;
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as ComposeFile;
const services = compose.services;

/** Compose interpolation with an empty environment: `${A:-x}`, `${A-x}` give x, `${A}` gives '', `$$` gives `$`. */
function interpolate(value: string): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, _name, op, arg) => {
    if (whole === '$$') return '$';
    if (op === ':?' || op === '?') throw new Error(`${whole}: required variable`);
    return op ? String(arg) : '';
  });
}

function service(name: string): Service {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

/** The environment of a service as the file writes it, before interpolation. */
function rawEnvironmentOf(name: string): Record<string, string> {
  const env = service(name).environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const)
    : Object.entries(env).map(([key, value]) => [key, value === null ? '' : String(value)] as const);
  return Object.fromEntries(entries);
}

/** The environment a service's process sees, interpolated. */
function environmentOf(name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(rawEnvironmentOf(name)).map(([key, value]) => [key, interpolate(value)]));
}

function argv(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value.map(interpolate) : interpolate(value).split(/\s+/).filter(Boolean);
}

interface PublishedPort {
  hostIp?: string;
  published?: number;
  target: number;
}

function portsOf(name: string): PublishedPort[] {
  return (service(name).ports ?? []).map((port) => {
    if (typeof port === 'object') {
      return {
        hostIp: port.host_ip,
        published: port.published === undefined ? undefined : Number(port.published),
        target: port.target,
      };
    }
    // [host_ip:]published:target[/protocol], or a bare target
    const parts = interpolate(String(port))
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    const target = Number(parts.pop());
    const published = parts.length > 0 ? Number(parts.pop()) : undefined;
    return { hostIp: parts[0], published, target };
  });
}

function dependenciesOf(name: string): Record<string, string | undefined> {
  const deps = service(name).depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((dep) => [dep, undefined]));
  return Object.fromEntries(Object.entries(deps).map(([dep, options]) => [dep, options?.condition]));
}

function healthcheckCommand(name: string): string {
  const check = service(name).healthcheck;
  if (!check || check.disable || check.test === undefined) return '';
  const test = Array.isArray(check.test) ? check.test : ['CMD-SHELL', check.test];
  if (test[0] === 'NONE') return '';
  return test.slice(1).join(' ');
}

const imageTag = (image: string) => image.slice(image.lastIndexOf(':') + 1);

/** Days in a Go duration (`720h`, `30d`, `43200m`) as the Temporal CLI takes it. */
function goDurationDays(value: string): number {
  const match = /^(\d+)(d|h|m)$/.exec(value);
  if (!match) throw new Error(`not a duration in d, h or m: ${value}`);
  const hours = { d: 24, h: 1, m: 1 / 60 }[match[2] as 'd' | 'h' | 'm'];
  return (Number(match[1]) * hours) / 24;
}

/** Days in an ISO 8601 duration of days or weeks (`P30D`, `P4W`). */
function isoDurationDays(value: string): number {
  const match = /^P(?:(\d+)W)?(?:(\d+)D)?$/.exec(value);
  if (!match || (!match[1] && !match[2])) throw new Error(`not an ISO duration in weeks or days: ${value}`);
  return Number(match[1] ?? 0) * 7 + Number(match[2] ?? 0);
}

/** The variables src/config.ts reads: the keys of its `envSchema` object. */
function configVariables(): Set<string> {
  const source = read('src/config.ts');
  const start = source.indexOf('const envSchema = z.object({');
  const end = source.indexOf('\n});', start);
  if (start < 0 || end < 0) throw new Error('src/config.ts: envSchema = z.object({ ... }) not found');
  return new Set([...source.slice(start, end).matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!));
}

const searchAttributeTypeNames: Partial<Record<SearchAttributeType, string>> = {
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.DATETIME]: 'Datetime',
  [SearchAttributeType.TEXT]: 'Text',
  [SearchAttributeType.INT]: 'Int',
  [SearchAttributeType.DOUBLE]: 'Double',
  [SearchAttributeType.BOOL]: 'Bool',
  [SearchAttributeType.KEYWORD_LIST]: 'KeywordList',
};

// ---------------------------------------------------------------------------------------------------------------
// Dockerfile, .dockerignore and the modules the entry points import.

interface DockerInstruction {
  keyword: string;
  args: string;
}

function dockerInstructions(): DockerInstruction[] {
  const logical = read('Dockerfile')
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return logical
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const space = line.search(/\s/);
      return { keyword: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

/** Top-level paths of the build context that COPY/ADD instructions take (`.` means all of it). */
function copiedFromContext(): Set<string> {
  const copied = new Set<string>();
  for (const { keyword, args } of dockerInstructions()) {
    if (keyword !== 'COPY' && keyword !== 'ADD') continue;
    const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
    const flags = words.filter((word) => word.startsWith('--'));
    if (flags.some((flag) => flag.startsWith('--from='))) continue;
    const operands = words.filter((word) => !word.startsWith('--'));
    for (const source of operands.slice(0, -1)) {
      const clean = path.posix.normalize(source).replace(/\/+$/, '');
      copied.add(clean === '' ? '.' : clean);
    }
  }
  return copied;
}

function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i]!;
    if (char === '*' && glob[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Whether .dockerignore lets a context path (or a parent of it) into the build: the last matching line decides. */
function inBuildContext(contextPath: string): boolean {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const candidates = contextPath.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
  let included = true;
  for (const line of patterns) {
    const negated = line.startsWith('!');
    const pattern = path.posix.normalize(line.slice(negated ? 1 : 0).replace(/^\/+/, '')).replace(/\/+$/, '');
    const regex = globToRegExp(pattern);
    if (candidates.some((candidate) => regex.test(candidate))) included = negated;
  }
  return included;
}

/** What every long-running command of the image starts with: node itself, the early signal catcher, then tsx. */
const NODE_WITH_TSX = ['node', '--import', './src/early-signals.mjs', '--import', 'tsx'];

/**
 * The file a command of the image runs: node itself, with tsx loaded (after the early signal catcher for the
 * services; the build's one-shot bundling needs none), and no npm in between, e.g.
 * `node --import ./src/early-signals.mjs --import tsx src/worker.ts` gives src/worker.ts.
 */
function nodeEntry(words: string[]): string {
  const prefix = words[2] === NODE_WITH_TSX[2] ? NODE_WITH_TSX : ['node', '--import', 'tsx'];
  const file = words[prefix.length];
  if (words.slice(0, prefix.length).join(' ') !== prefix.join(' ') || !file?.endsWith('.ts')) {
    throw new Error(`not ${NODE_WITH_TSX.join(' ')} <file.ts>: ${words.join(' ')}`);
  }
  return file;
}

/** The Dockerfile's RUN that bundles the workflows, as words. */
function bundleStep(): string[] {
  const run = dockerInstructions().find(({ keyword, args }) => keyword === 'RUN' && /bundle-cli\.ts/.test(args));
  if (!run) throw new Error('Dockerfile: no RUN of src/temporal/bundle-cli.ts');
  return run.args.split(/\s+/);
}

/**
 * Follows runtime imports (not `import type`) from the entry files. Returns the repository files reached (whether or
 * not they exist yet) and the packages imported by name.
 */
function importClosure(entries: string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [...entries];
  const specifiers =
    /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|new URL\(\s*['"](\.[^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/gm;
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const absolute = path.join(root, file);
    if (!existsSync(absolute) || !/\.[cm]?[tj]s$/.test(file)) continue;
    const source = readFileSync(absolute, 'utf8');
    for (const match of source.matchAll(specifiers)) {
      const specifier = (match[1] ?? match[2] ?? match[3])!;
      if (specifier.startsWith('.')) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
        pending.push(
          target.endsWith('.js') && existsSync(path.join(root, target.replace(/\.js$/, '.ts')))
            ? target.replace(/\.js$/, '.ts')
            : target,
        );
      } else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier)) {
        const parts = specifier.split('/');
        packages.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      }
    }
  }
  return { files, packages };
}

/** What the image runs: the worker and the bridge as compose starts them, and the build step that bundles. */
const entryFiles = [
  nodeEntry(argv(service('worker').command)),
  nodeEntry(argv(service('bridge').command)),
  nodeEntry(bundleStep()),
];

// ---------------------------------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  it('runs every piece of the stack from a pinned release image', () => {
    const images = Object.fromEntries(Object.entries(services).map(([name, s]) => [name, s.image]));

    expect(images).toMatchObject({
      postgres: expect.stringMatching(/^postgres:16\.\d+(-[a-z0-9]+)?$/),
      'temporal-schema': expect.stringMatching(/^temporalio\/admin-tools:\d+\.\d+\.\d+$/),
      temporal: expect.stringMatching(/^temporalio\/server:\d+\.\d+\.\d+$/),
      'temporal-ui': expect.stringMatching(/^temporalio\/ui:\d+\.\d+\.\d+$/),
      'temporal-setup': expect.stringMatching(/^temporalio\/admin-tools:\d+\.\d+\.\d+$/),
    });
    // The schema that admin-tools migrates to is the one the server of the same release expects.
    expect(imageTag(images['temporal-schema']!)).toBe(imageTag(images.temporal!));
    expect(imageTag(images['temporal-setup']!)).toBe(imageTag(images.temporal!));
  });

  it("builds the worker and the bridge from the repository's Dockerfile", () => {
    for (const name of ['worker', 'bridge']) {
      const build = service(name).build;
      const context = typeof build === 'string' ? build : build?.context;
      const dockerfile = typeof build === 'object' ? (build.dockerfile ?? 'Dockerfile') : 'Dockerfile';

      expect(path.resolve(root, context ?? '')).toBe(path.resolve(root));
      expect(existsSync(path.join(root, dockerfile))).toBe(true);
    }
    expect(argv(service('worker').command)).toEqual([...NODE_WITH_TSX, 'src/worker.ts']);
    expect(argv(service('bridge').command)).toEqual([...NODE_WITH_TSX, 'src/bridge.ts']);
  });

  it('publishes the Temporal frontend on 7233, the UI on 8080 and the bridge on 3000', () => {
    expect(portsOf('temporal')).toContainEqual(expect.objectContaining({ published: 7233, target: 7233 }));
    expect(portsOf('temporal-ui')).toContainEqual(expect.objectContaining({ published: 8080, target: 8080 }));
    expect(portsOf('bridge')).toContainEqual(expect.objectContaining({ published: 3000, target: 3000 }));
    expect(Number(environmentOf('temporal-ui').TEMPORAL_UI_PORT ?? 8080)).toBe(8080);
  });

  it('gives every dependency a condition that the depended-on service can meet', () => {
    const conditions = ['service_started', 'service_healthy', 'service_completed_successfully'];
    for (const name of Object.keys(services)) {
      for (const [dependency, condition] of Object.entries(dependenciesOf(name))) {
        expect(Object.keys(services), `${name} depends on ${dependency}`).toContain(dependency);
        expect(conditions, `${name} -> ${dependency}`).toContain(condition);
        if (condition === 'service_healthy') expect(healthcheckCommand(dependency), dependency).not.toBe('');
        if (condition === 'service_completed_successfully') {
          expect(service(dependency).restart ?? 'no', `${dependency} must be a one-shot job`).toBe('no');
        }
      }
    }
  });

  it('starts in order: database, schema, server, namespace setup, then the UI, worker and bridge', () => {
    expect(dependenciesOf('temporal-schema')).toEqual({ postgres: 'service_healthy' });
    expect(dependenciesOf('temporal')).toEqual({ 'temporal-schema': 'service_completed_successfully' });
    expect(dependenciesOf('temporal-ui')).toEqual({ temporal: 'service_healthy' });
    expect(dependenciesOf('temporal-setup')).toEqual({ temporal: 'service_healthy' });
    expect(dependenciesOf('worker')).toEqual({ 'temporal-setup': 'service_completed_successfully' });
    expect(dependenciesOf('bridge')).toEqual({ 'temporal-setup': 'service_completed_successfully' });
  });

  it('checks the health of PostgreSQL, the Temporal frontend and the bridge', () => {
    expect(healthcheckCommand('postgres')).toMatch(/\bpg_isready\b/);
    expect(healthcheckCommand('temporal')).toMatch(/\b7233\b/);
    const bridgePort = loadConfig(environmentOf('bridge')).port;
    expect(healthcheckCommand('bridge')).toContain(`:${bridgePort}/readyz`);
  });

  it('migrates both Temporal databases with the postgres12 plugin and the credentials the server uses', () => {
    const job = environmentOf('temporal-schema');
    const server = environmentOf('temporal');
    const database = environmentOf('postgres');

    expect(argv(service('temporal-schema').entrypoint).join(' ')).toMatch(/setup-schema\.sh$/);
    expect(server.DB).toBe('postgres12');
    expect(job.SQL_PLUGIN).toBe(server.DB);
    expect(job.SQL_HOST).toBe('postgres');
    expect(server.POSTGRES_SEEDS).toBe('postgres');
    expect(job.SQL_PORT).toBe(server.DB_PORT);
    expect([job.SQL_USER, server.POSTGRES_USER]).toEqual([database.POSTGRES_USER, database.POSTGRES_USER]);
    expect([job.SQL_PASSWORD, server.POSTGRES_PWD]).toEqual([database.POSTGRES_PASSWORD, database.POSTGRES_PASSWORD]);
    expect([job.DBNAME, job.VISIBILITY_DBNAME]).toEqual(['temporal', 'temporal_visibility']);
    expect([server.DBNAME ?? 'temporal', server.VISIBILITY_DBNAME ?? 'temporal_visibility']).toEqual([
      job.DBNAME,
      job.VISIBILITY_DBNAME,
    ]);
  });

  it('mounts every file a Temporal container is pointed at', () => {
    const mountedFile = (name: string, containerPath: string) => {
      for (const volume of service(name).volumes ?? []) {
        const [source, target] =
          typeof volume === 'string' ? interpolate(volume).split(':') : [volume.source, volume.target];
        if (!source || !target || !source.startsWith('.')) continue;
        const relative = path.posix.relative(target, containerPath);
        if (!relative.startsWith('..')) return path.join(root, source, relative);
      }
      return undefined;
    };
    const scripts = ['temporal-schema', 'temporal-setup'].map((name) => {
      const script = argv(service(name).entrypoint).find((word) => word.endsWith('.sh'))!;
      return mountedFile(name, script);
    });
    const dynamicConfig = mountedFile('temporal', environmentOf('temporal').DYNAMIC_CONFIG_FILE_PATH!);

    for (const file of [...scripts, dynamicConfig]) {
      expect(file).toBeDefined();
      expect(existsSync(file!), file).toBe(true);
    }
  });

  it('registers exactly the search attributes of workflows/search-attributes.ts, with their types', () => {
    const registered = argv(service('temporal-setup').command).map((pair) => pair.split('='));
    const expected = allSearchAttributes.map((key) => [key.name, searchAttributeTypeNames[key.type]]);

    expect(argv(service('temporal-setup').entrypoint).join(' ')).toMatch(/setup-namespace\.sh$/);
    expect(registered.sort()).toEqual(expected.sort());
  });

  it('keeps closed workflows for at least 30 days and no less than the late window', () => {
    const retentionDays = goDurationDays(environmentOf('temporal-setup').TEMPORAL_NAMESPACE_RETENTION!);
    const lateWindowDays = isoDurationDays(loadConfig(environmentOf('worker')).lateWindow);

    expect(retentionDays).toBeGreaterThanOrEqual(30);
    expect(retentionDays).toBeGreaterThanOrEqual(lateWindowDays);
  });

  it('gives the worker and the bridge only variables that src/config.ts reads', () => {
    const known = configVariables();
    for (const name of ['worker', 'bridge']) {
      const env = environmentOf(name);

      expect(Object.keys(env)).toEqual(
        expect.arrayContaining(['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE']),
      );
      // Node's own: the worker's heap bound.
      expect(
        Object.keys(env).filter((key) => !known.has(key) && key !== 'NODE_OPTIONS'),
        `${name}: unknown variables`,
      ).toEqual([]);
      expect(() => loadConfig(env)).not.toThrow();
    }
  });

  it('passes every setting of src/config.ts to the worker and the bridge', () => {
    const variables = [...configVariables()];
    for (const name of ['worker', 'bridge']) {
      const missing = variables.filter((variable) => !(variable in environmentOf(name)));

      expect(missing, `${name}: settings of src/config.ts that compose does not pass`).toEqual([]);
    }
  });

  it('takes every setting from the host except those the stack itself fixes', () => {
    // The stack's own: its frontend, the container's port and paths, the secret. The host's values for these would
    // point elsewhere (e.g. what `npm start` uses).
    const fixed = [
      'TEMPORAL_ADDRESS',
      'PORT',
      'WATCHER_DATA_DIR',
      'WATCHER_WORKFLOW_BUNDLE',
      'WATCHER_PRINCIPALS_FILE',
    ];
    for (const name of ['worker', 'bridge']) {
      const raw = rawEnvironmentOf(name);
      const notPassed = [...configVariables()].filter(
        (variable) =>
          !fixed.includes(variable) && !new RegExp(`^\\$\\{${variable}(:?-[^}]*)?\\}$`).test(raw[variable] ?? ''),
      );

      expect(notPassed, `${name}: settings not written as \${NAME:-default}`).toEqual([]);
    }
  });

  it('points the worker, the bridge, the setup job and the UI at the one Temporal frontend and namespace', () => {
    const namespace = environmentOf('temporal-setup').TEMPORAL_NAMESPACE;
    for (const name of ['worker', 'bridge']) {
      const config = loadConfig(environmentOf(name));

      expect(config.temporal.address, name).toBe('temporal:7233');
      expect(config.temporal.namespace, name).toBe(namespace);
      expect(config.temporal.taskQueue, name).toBe(loadConfig(environmentOf('worker')).temporal.taskQueue);
    }
    expect(environmentOf('temporal-setup').TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(environmentOf('temporal-ui')).toMatchObject({
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_DEFAULT_NAMESPACE: namespace,
    });
    expect(portsOf('temporal').map((port) => port.target)).toContain(7233);
  });

  it('hands the bridge its principals file as a mounted secret', () => {
    const file = loadConfig(environmentOf('bridge')).principalsFile;
    const mounted = (service('bridge').secrets ?? []).map((secret) =>
      typeof secret === 'string'
        ? { source: secret, target: `/run/secrets/${secret}` }
        : {
            source: secret.source,
            target: secret.target?.startsWith('/') ? secret.target : `/run/secrets/${secret.target ?? secret.source}`,
          },
    );
    const secret = mounted.find((entry) => entry.target === file);

    expect(file).toBeDefined();
    expect(secret).toBeDefined();
    expect(compose.secrets?.[secret!.source]?.file).toBeTruthy();
  });

  it("bounds the worker's heap, and its cache defaults to what that heap holds", () => {
    const env = environmentOf('worker');
    const heapMiB = Number(/--max-old-space-size=(\d+)/.exec(env.NODE_OPTIONS ?? '')?.[1]);

    expect(heapMiB).toBeGreaterThan(0);
    expect(heapMiB).toBeLessThanOrEqual(400);
    expect(environmentOf('bridge').NODE_OPTIONS).toBeUndefined();
    // Compose leaves the cache unset, so the worker sizes it from its heap limit: the old space plus the 6 MiB of
    // young generation Node adds (three semi-spaces: 390 MiB for 384 with --max-semi-space-size=2), which gives 111.
    expect(env.WATCHER_WORKER_MAX_CACHED_WORKFLOWS ?? '').toBe('');
    expect(env.NODE_OPTIONS).toContain('--max-semi-space-size=2');
    expect(defaultMaxCachedWorkflows(heapMiB + 6)).toBe(111);
  });

  it('lets the worker scale: no container name and no published port', () => {
    expect(service('worker').container_name).toBeUndefined();
    expect(service('worker').ports ?? []).toEqual([]);
  });

  it('keeps PostgreSQL data in a named volume', () => {
    const volumes = (service('postgres').volumes ?? []).map((volume) =>
      typeof volume === 'string' ? interpolate(volume).split(':') : [volume.source, volume.target],
    );
    const data = volumes.find(([, target]) => target === '/var/lib/postgresql/data');

    expect(data).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(data![0]);
  });
});

describe('Dockerfile', () => {
  it('copies every directory and file the worker and bridge entry points import', () => {
    const { files } = importClosure(entryFiles);
    const needed = new Set([...files].map((file) => file.split('/')[0]!));
    const copied = copiedFromContext();

    expect([...needed].sort()).toEqual(expect.arrayContaining(['activities', 'src', 'workflows']));
    for (const top of needed) {
      expect(copied.has(top) || copied.has('.'), `COPY ${top}`).toBe(true);
      expect(inBuildContext(top), `.dockerignore lets ${top} in`).toBe(true);
    }
  });

  it('installs, with the production install, every package the entry points import', () => {
    const { packages } = importClosure(entryFiles);
    const manifest = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const install = dockerInstructions().find(({ keyword, args }) => keyword === 'RUN' && /\bnpm ci\b/.test(args));

    expect(install?.args).toMatch(/--omit=dev/);
    expect(['package.json', 'package-lock.json'].filter((file) => !copiedFromContext().has(file))).toEqual([]);
    expect(['package.json', 'package-lock.json'].filter((file) => !inBuildContext(file))).toEqual([]);
    // tsx runs the entry points, so it is a runtime dependency too.
    expect([...packages, 'tsx'].filter((name) => !(name in manifest.dependencies)).sort()).toEqual([]);
  });

  it('runs as the unprivileged node user and starts the bridge with node by default', () => {
    const instructions = dockerInstructions();
    const lastUser = instructions.filter(({ keyword }) => keyword === 'USER').at(-1);
    const cmd = instructions.filter(({ keyword }) => keyword === 'CMD').at(-1);

    expect(lastUser?.args).toBe('node');
    expect(JSON.parse(cmd!.args)).toEqual(argv(service('bridge').command));
  });

  it('builds on Node 24 LTS, a release package.json engines admits', () => {
    const from = dockerInstructions()[0]!;
    const major = /^node:(\d+)(\.[\d.]+)?-(bookworm-)?slim\b/.exec(from.args)?.[1];
    const engines = (JSON.parse(read('package.json')) as { engines?: { node?: string } }).engines?.node ?? '';

    expect(from.keyword).toBe('FROM');
    expect(major).toBe('24');
    expect(engines.split('||').map((range) => range.trim())).toContainEqual(expect.stringMatching(/^\^24(\.|$)/));
  });

  it('bundles the workflows at build time into the file the worker is told to load', () => {
    const [, , , , output] = bundleStep();
    const runBeforeUser = dockerInstructions().findIndex(
      ({ keyword, args }) => keyword === 'RUN' && /bundle-cli\.ts/.test(args),
    );
    const user = dockerInstructions().findIndex(({ keyword }) => keyword === 'USER');

    expect(output).toMatch(/^\/app\/.+\.js$/);
    expect(loadConfig(environmentOf('worker')).workflowBundle).toBe(output);
    // Bundled as root, so that the node user that runs the worker cannot change the code it loads.
    expect(runBeforeUser).toBeLessThan(user);
  });

  it('keeps local state and secrets out of the build context', () => {
    for (const file of ['.data', 'node_modules', 'deploy/secrets/principals.json', '.env', 'test', '.git']) {
      expect(inBuildContext(file), file).toBe(false);
    }
  });
});

describe('deploy/principals.example.json', () => {
  it('is a principals file the bridge accepts', () => {
    const example: unknown = JSON.parse(read('deploy/principals.example.json'));

    expect(principalsFileSchema.safeParse(example).success).toBe(true);
  });
});
