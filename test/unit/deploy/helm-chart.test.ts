/**
 * deploy/helm/expectations-watcher as helm renders it: `helm lint` and `helm template` over the defaults and the
 * values files of its ci/ folder, and the manifests held to the code: every variable the containers get is one the
 * watcher reads (src/config.ts) and loads, ports and probes meet, every Secret referred to is one the values name or
 * the chart renders, and no secret value appears outside a Secret. helm comes from `npm run provision`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { findHelm, helmBinDir, HELM_VERSION } from '../../../dev/temporal/provision-helm.js';
import { CONFIG_VARIABLES, loadConfig } from '../../../src/config.js';
import { operations } from '../../../src/http/openapi-routes.js';
import { CONNECTION_VARIABLES, GRPC_META_PREFIX } from '../../../src/temporal/connection-settings.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const chart = path.join(root, 'deploy/helm/expectations-watcher');

// ---------------------------------------------------------------------------------------------------------------
// The manifests, as much of them as the checks read.

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
  exec?: unknown;
}
interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: unknown[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: { name: string };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
interface Deployment extends Manifest {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}
interface Service extends Manifest {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] };
}

/** The values, as much of them as the checks read; `existingSecret` anywhere names a Secret (secretsNamedIn). */
interface Values {
  settings?: Record<string, unknown> | null;
  [key: string]: unknown;
}

// ---------------------------------------------------------------------------------------------------------------
// helm, and each values file rendered once.

/** The helm `npm run provision` built (or HELM, or one on PATH); a missing one fails every test, saying how to get it. */
function helmBinary(): string {
  const found = findHelm();
  if (!found) {
    throw new Error(
      `no helm to test deploy/helm with: run \`npm run provision\` (it builds helm ${HELM_VERSION} once with go install ` +
        `into ${helmBinDir()}), or set HELM to a helm binary`,
    );
  }
  return found.path;
}

/** helm's answer: stdout alone (the manifests), and everything it wrote for a message. */
async function helm(args: string[]): Promise<{ ok: boolean; stdout: string; output: string }> {
  const binary = helmBinary();
  try {
    const { stdout, stderr } = await run(binary, args, { cwd: root, maxBuffer: 16 * 2 ** 20 });
    return { ok: true, stdout, output: stdout + stderr };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    return {
      ok: false,
      stdout: failed.stdout ?? '',
      output: `${failed.stdout ?? ''}${failed.stderr ?? failed.message}`,
    };
  }
}

/** `helm template` of the chart with `args`: the manifests, or a thrown error with helm's output. */
async function render(args: string[]): Promise<Manifest[]> {
  const { ok, stdout, output } = await helm(['template', 'watcher', chart, '--namespace', 'watching', ...args]);
  if (!ok) throw new Error(`helm template ${args.join(' ')} failed:\n${output}`);
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as Manifest | null)
    .filter((doc): doc is Manifest => doc !== null);
}

const valuesFiles = readdirSync(path.join(chart, 'ci'))
  .filter((file) => file.endsWith('-values.yaml'))
  .sort();
const defaults = parse(readFileSync(path.join(chart, 'values.yaml'), 'utf8')) as Values;

interface Case {
  name: string;
  args: string[];
  /** The values file alone (empty for the defaults): where the test values' secrets are. */
  text: string;
  values: Values;
  lint: { ok: boolean; stdout: string; output: string };
  manifests: Manifest[];
}

const cases: Case[] = [{ file: undefined }, ...valuesFiles.map((file) => ({ file }))].map(({ file }) => {
  const text = file ? readFileSync(path.join(chart, 'ci', file), 'utf8') : '';
  const own = (file ? parse(text) : {}) as Partial<Values>;
  return {
    name: file ?? 'values.yaml (defaults)',
    args: file ? ['--values', path.join(chart, 'ci', file)] : [],
    text,
    values: mergeValues(defaults, own),
    lint: { ok: false, stdout: '', output: 'not run' },
    manifests: [],
  };
});

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Helm's merge of a values file over the defaults: maps merge, everything else (and null, which deletes) replaces. */
function mergeValues<T>(base: T, over: unknown): T {
  if (!isMap(base) || !isMap(over)) return (over === undefined ? base : over) as T;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === null) delete merged[key];
    else merged[key] = mergeValues(merged[key], value);
  }
  return merged as T;
}

/** Why nothing could be rendered (no helm): every test fails with it, rather than being skipped. */
let setupError: unknown;

beforeAll(async () => {
  try {
    helmBinary();
    await Promise.all(
      cases.map(async (c) => {
        c.lint = await helm(['lint', chart, '--strict', ...c.args]);
        c.manifests = await render(c.args);
      }),
    );
  } catch (error) {
    setupError = error;
  }
});

beforeEach(() => {
  if (setupError) throw setupError;
});

// ---------------------------------------------------------------------------------------------------------------
// Reading the manifests.

const ofKind = <T extends Manifest = Manifest>(manifests: Manifest[], kind: string) =>
  manifests.filter((m) => m.kind === kind) as T[];

function deployment(manifests: Manifest[], component: 'worker' | 'bridge'): Deployment {
  const found = ofKind<Deployment>(manifests, 'Deployment').filter(
    (d) => d.metadata.labels?.['app.kubernetes.io/component'] === component,
  );
  expect(found, `one ${component} Deployment`).toHaveLength(1);
  return found[0]!;
}

const containersOf = (d: Deployment) => [
  ...(d.spec.template.spec.initContainers ?? []),
  ...d.spec.template.spec.containers,
];
const allContainers = (manifests: Manifest[]) => ofKind<Deployment>(manifests, 'Deployment').flatMap(containersOf);

function envOf(container: Container): Map<string, EnvVar> {
  return new Map((container.env ?? []).map((variable) => [variable.name, variable]));
}

/** Does a Service or probe's port (a name or a number) name a port the container declares? */
function portOf(container: Container, port: string | number): number | undefined {
  const declared = container.ports ?? [];
  const match =
    typeof port === 'number' ? declared.find((p) => p.containerPort === port) : declared.find((p) => p.name === port);
  return match?.containerPort;
}

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/** Mebibytes of a Kubernetes quantity in Mi or Gi. */
function mebibytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`not a quantity in Mi or Gi: ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/** Every Secret name the values give (`existingSecret` anywhere in them). */
function secretsNamedIn(values: unknown): Set<string> {
  const names = new Set<string>();
  const walk = (node: unknown) => {
    if (!isMap(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'existingSecret' && typeof value === 'string' && value) names.add(value);
      else walk(value);
    }
  };
  walk(values);
  return names;
}

/** A rendered Secret's entries, decoded. */
function secretData(secret: Manifest): Record<string, string> {
  return {
    ...Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    ),
    ...secret.stringData,
  };
}

/** The variables the watcher reads: its schema's, the Temporal connection's (and their gRPC headers), Node's own. */
const readByTheWatcher = (name: string) =>
  CONFIG_VARIABLES.includes(name) ||
  CONNECTION_VARIABLES.has(name) ||
  name.startsWith(GRPC_META_PREFIX) ||
  name === 'NODE_OPTIONS';

/** Read only by `npm start`'s embedded dev server, which the chart never runs. */
const NOT_FOR_A_CLUSTER = ['WATCHER_EMBEDDED_TEMPORAL_PORT'];

/** The environment a container's process sees: Secret references filled with a stand-in of valid form. */
function processEnv(container: Container, files: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const variable of container.env ?? []) {
    if (variable.valueFrom) env[variable.name] = 'x'.repeat(48);
    // The TLS files are read at start: stand-ins, since the Secret's files are not here.
    else if (variable.name.startsWith('TEMPORAL_TLS_') && variable.name.endsWith('_PATH'))
      env[variable.name] = path.join(files, path.basename(variable.value ?? ''));
    else env[variable.name] = variable.value;
  }
  return env;
}

// ---------------------------------------------------------------------------------------------------------------

describe('the Helm chart', () => {
  it('is tested over at least three values files besides the defaults', () => {
    expect(valuesFiles.length).toBeGreaterThanOrEqual(3);
  });

  describe.each(cases)('with $name', (c) => {
    it('passes helm lint --strict', () => {
      expect(c.lint.ok, c.lint.output).toBe(true);
      expect(c.lint.output).toContain('0 chart(s) failed');
    });

    it('gives the containers only variables the watcher reads, each once, and values it loads', () => {
      const files = mkdtempSync(path.join(os.tmpdir(), 'helm-chart-tls-'));
      for (const name of ['client.crt', 'client.key', 'server-ca.crt']) writeFileSync(path.join(files, name), 'pem');
      for (const container of allContainers(c.manifests)) {
        const names = (container.env ?? []).map((variable) => variable.name);

        expect(
          names.filter((name) => !readByTheWatcher(name)),
          `${container.name}: unknown variables`,
        ).toEqual([]);
        expect(names, `${container.name}: a variable set twice`).toEqual([...new Set(names)]);
        expect(container.envFrom, `${container.name}: envFrom hides names from this test`).toBeUndefined();
        expect(() => loadConfig(processEnv(container, files)), container.name).not.toThrow();
      }
    });

    it('runs the worker and the bridge entry points, from the image, with the same Temporal connection', () => {
      const worker = deployment(c.manifests, 'worker').spec.template.spec.containers[0]!;
      const bridge = deployment(c.manifests, 'bridge').spec.template.spec.containers[0]!;
      const scripts = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      };

      expect(worker.command?.join(' ')).toBe(scripts.scripts.worker);
      expect(bridge.command?.join(' ')).toBe(scripts.scripts.bridge);
      for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE', 'WATCHER_PRINCIPALS_FILE']) {
        expect(envOf(worker).get(name)?.value, name).toBeDefined();
        expect(envOf(bridge).get(name), name).toEqual(envOf(worker).get(name));
      }
    });

    it('serves the bridge on the port it listens on, and the worker metrics on its own', () => {
      const bridge = deployment(c.manifests, 'bridge');
      const worker = deployment(c.manifests, 'worker');
      const bridgeContainer = bridge.spec.template.spec.containers[0]!;
      const workerContainer = worker.spec.template.spec.containers[0]!;

      expect(portOf(bridgeContainer, 'http')).toBe(Number(envOf(bridgeContainer).get('PORT')?.value));
      expect(portOf(workerContainer, 'metrics')).toBe(
        Number(envOf(workerContainer).get('WATCHER_WORKER_METRICS_PORT')?.value),
      );
      const services = ofKind<Service>(c.manifests, 'Service');
      expect(services.length).toBeGreaterThan(0);
      for (const service of services) {
        const backends = [bridge, worker].filter((d) =>
          selects(service.spec.selector, d.spec.template.metadata.labels),
        );

        expect(backends, `Service ${service.metadata.name} selects one Deployment`).toHaveLength(1);
        for (const port of service.spec.ports) {
          expect(
            portOf(backends[0]!.spec.template.spec.containers[0]!, port.targetPort),
            `Service ${service.metadata.name} port ${port.name}`,
          ).toBeDefined();
        }
      }
    });

    it('probes /healthz and /readyz, on a port the container declares and without a token', () => {
      const open = new Set(operations.filter((op) => op.method === 'get' && !op.roles).map((op) => op.path));
      const bridge = deployment(c.manifests, 'bridge').spec.template.spec.containers[0]!;

      expect(bridge.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(bridge.readinessProbe?.httpGet?.path).toBe('/readyz');
      for (const container of allContainers(c.manifests)) {
        for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
          if (!probe) continue;
          expect(probe.httpGet, `${container.name}: an HTTP probe`).toBeDefined();
          expect(['/healthz', '/readyz']).toContain(probe.httpGet!.path);
          expect(open.has(probe.httpGet!.path), `${probe.httpGet!.path} is a route without a token`).toBe(true);
          expect(portOf(container, probe.httpGet!.port), `${container.name}: probe port`).toBeDefined();
        }
      }
    });

    it('refers only to Secrets the values name or the chart renders, and to keys they hold', () => {
      const named = secretsNamedIn(c.values);
      const rendered = new Map(ofKind(c.manifests, 'Secret').map((s) => [s.metadata.name, secretData(s)]));
      const references: { name: string; key?: string; from: string }[] = [];
      for (const d of ofKind<Deployment>(c.manifests, 'Deployment')) {
        const volumes = d.spec.template.spec.volumes ?? [];
        for (const container of containersOf(d)) {
          for (const variable of container.env ?? []) {
            const ref = variable.valueFrom?.secretKeyRef;
            if (ref) references.push({ ...ref, from: `${container.name} ${variable.name}` });
          }
          for (const mount of container.volumeMounts ?? []) {
            expect(
              volumes.map((v) => v.name),
              `${container.name} mounts ${mount.name}`,
            ).toContain(mount.name);
          }
        }
        for (const volume of volumes) {
          if (!volume.secret) continue;
          const items = volume.secret.items ?? [{ key: undefined }];
          for (const item of items)
            references.push({ name: volume.secret.secretName, key: item.key, from: volume.name });
        }
      }
      for (const auth of ofKind(c.manifests, 'TriggerAuthentication')) {
        for (const ref of (auth.spec?.secretTargetRef ?? []) as { name: string; key: string; parameter: string }[])
          references.push({ name: ref.name, key: ref.key, from: `TriggerAuthentication ${ref.parameter}` });
      }

      expect(references.length).toBeGreaterThan(0);
      for (const ref of references) {
        const data = rendered.get(ref.name);
        expect(data !== undefined || named.has(ref.name), `${ref.from}: Secret ${ref.name}`).toBe(true);
        if (data && ref.key) expect(Object.keys(data), `${ref.from}: key ${ref.key} of ${ref.name}`).toContain(ref.key);
      }
    });

    it('puts no secret value anywhere but in a Secret', () => {
      const inSecrets = ofKind(c.manifests, 'Secret').flatMap((s) => Object.values(secretData(s)));
      const markers = [...new Set(c.text.match(/leak-marker-[A-Za-z0-9=_-]+/g) ?? [])];
      for (const marker of markers) {
        expect(
          inSecrets.some((value) => value.includes(marker)),
          `${marker} reaches a Secret`,
        ).toBe(true);
      }
      const secrets = [...markers, ...inSecrets.filter((value) => value.length >= 16)];
      const forms = secrets.flatMap((value) => [value, Buffer.from(value).toString('base64')]);

      // Every other object whole: ConfigMaps, containers' command, args and env values, annotations, KEDA's metadata.
      for (const manifest of c.manifests.filter((m) => m.kind !== 'Secret')) {
        const text = JSON.stringify(manifest);
        for (const form of forms) {
          expect(text.includes(form), `${manifest.kind} ${manifest.metadata.name}: ${form.slice(0, 24)}…`).toBe(false);
        }
      }
    });

    it('bounds each heap at three quarters of its memory limit, and requests memory', () => {
      for (const container of allContainers(c.manifests)) {
        const heap = /--max-old-space-size=(\d+)/.exec(envOf(container).get('NODE_OPTIONS')?.value ?? '');
        const limit = container.resources?.limits?.memory;

        expect(heap, `${container.name}: NODE_OPTIONS bounds the heap`).not.toBeNull();
        expect(limit, `${container.name}: a memory limit`).toBeDefined();
        expect(container.resources?.requests?.memory, `${container.name}: a memory request`).toBeDefined();
        expect(Number(heap![1]), container.name).toBeLessThanOrEqual(mebibytes(limit!) * 0.75);
      }
    });

    it('scales the workers with KEDA on the task queue they poll, when asked to, and never to zero', () => {
      const scaled = ofKind(c.manifests, 'ScaledObject');
      const worker = deployment(c.manifests, 'worker');
      if (scaled.length === 0) {
        expect(worker.spec.replicas).toBeGreaterThan(0);
        return;
      }
      const env = envOf(worker.spec.template.spec.containers[0]!);
      const spec = scaled[0]!.spec as {
        scaleTargetRef: { name: string };
        minReplicaCount: number;
        triggers: { type: string; metadata: Record<string, string>; authenticationRef?: { name: string } }[];
      };
      const trigger = spec.triggers[0]!;

      expect(spec.scaleTargetRef.name).toBe(worker.metadata.name);
      expect(worker.spec.replicas, 'KEDA owns the count').toBeUndefined();
      expect(spec.minReplicaCount).toBeGreaterThanOrEqual(1);
      expect(trigger.type).toBe('temporal');
      expect(trigger.metadata).toMatchObject({
        endpoint: env.get('TEMPORAL_ADDRESS')?.value,
        namespace: env.get('TEMPORAL_NAMESPACE')?.value,
        taskQueue: env.get('TEMPORAL_TASK_QUEUE')?.value,
      });
      if (env.has('TEMPORAL_API_KEY')) {
        const auth = ofKind(c.manifests, 'TriggerAuthentication').find(
          (m) => m.metadata.name === trigger.authenticationRef?.name,
        );
        expect(auth, 'the scaler authenticates as the workers do').toBeDefined();
      }
    });

    it('scrapes every Service it monitors on a port that Service has', () => {
      const services = ofKind<Service>(c.manifests, 'Service');
      for (const monitor of ofKind(c.manifests, 'ServiceMonitor')) {
        const spec = monitor.spec as {
          selector: { matchLabels: Record<string, string> };
          endpoints: { port: string }[];
        };
        const selected = services.filter((s) => selects(spec.selector.matchLabels, s.metadata.labels ?? {}));

        expect(selected, monitor.metadata.name).toHaveLength(1);
        for (const endpoint of spec.endpoints)
          expect(selected[0]!.spec.ports.map((p) => p.name)).toContain(endpoint.port);
      }
    });

    it('ships the Grafana dashboard of deploy/grafana when it ships one', () => {
      const dashboards = ofKind(c.manifests, 'ConfigMap').filter((m) => m.metadata.name.endsWith('-dashboard'));
      for (const configMap of dashboards) {
        expect(configMap.data?.['expectations-watcher.json']).toBe(
          readFileSync(path.join(root, 'deploy/grafana/expectations-watcher.json'), 'utf8').trimEnd(),
        );
      }
    });
  });

  it('sets every variable of src/config.ts itself or takes it in `settings`, and nothing else there', () => {
    const schema = JSON.parse(readFileSync(path.join(chart, 'values.schema.json'), 'utf8')) as {
      properties: { settings: { propertyNames: { enum: string[] } } };
    };
    const settings = schema.properties.settings.propertyNames.enum;
    const fromSettings = new Set(cases.flatMap((c) => Object.keys(c.values.settings ?? {})));
    const setByChart = new Set(
      cases.flatMap((c) =>
        allContainers(c.manifests)
          .flatMap((container) => (container.env ?? []).map((variable) => variable.name))
          .filter((name) => !fromSettings.has(name)),
      ),
    );

    expect(settings.filter((name) => !CONFIG_VARIABLES.includes(name))).toEqual([]);
    expect(
      settings.filter((name) => setByChart.has(name)),
      'settings the chart sets itself',
    ).toEqual([]);
    expect(NOT_FOR_A_CLUSTER.every((name) => CONFIG_VARIABLES.includes(name))).toBe(true);
    expect(
      CONFIG_VARIABLES.filter(
        (name) => !setByChart.has(name) && !settings.includes(name) && !NOT_FOR_A_CLUSTER.includes(name),
      ),
      'variables of src/config.ts the chart cannot set',
    ).toEqual([]);
  });

  it.each([
    ['a setting the chart sets itself', ['--set', 'settings.TEMPORAL_ADDRESS=elsewhere:7233'], /TEMPORAL_ADDRESS/],
    ['a setting src/config.ts does not read', ['--set', 'settings.WATCHER_NO_SUCH=1'], /WATCHER_NO_SUCH/],
    ['no principals', ['--set', 'principals.existingSecret='], /principals/],
    ['KEDA scaling to zero', ['--set', 'keda.enabled=true', '--set', 'keda.minReplicaCount=0'], /minReplicaCount/],
    [
      'a client certificate without its key',
      ['--set', 'temporal.tls.existingSecret=t', '--set', 'temporal.tls.clientKeyKey='],
      /clientKeyKey/,
    ],
  ])('refuses %s', async (_what, args, message) => {
    await expect(render(args)).rejects.toThrow(message);
  });
});
