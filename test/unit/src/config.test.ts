import { describe, expect, it } from 'vitest';
import { ConfigError, defaultMaxCachedWorkflows, heapLimitMiB, loadConfig } from '../../../src/config.js';

describe('loadConfig', () => {
  it('applies the defaults of DESIGN 5 to an empty environment', () => {
    const config = loadConfig({});

    expect(config.temporal).toMatchObject({ address: undefined, namespace: 'default', taskQueue: 'expectations' });
    expect(config.port).toBe(3000);
    expect(config.dataDir.endsWith('.data')).toBe(true);
    expect(config.factRetention).toBe('P7D');
    expect(config.lateWindow).toBe('P30D');
    expect(config.maxLineage).toBe(10);
    expect(config.maxClockSkew).toBe('PT5M');
    expect(config.principalsFile).toBeUndefined();
    expect(config.maxCachedWorkflows).toBe(defaultMaxCachedWorkflows(heapLimitMiB()));
    expect(config.workflowBundle).toBeUndefined();
    expect(config.quotas).toEqual({ openExpectations: 10_000, raisesPerMinute: 600, factsPerMinute: 6_000 });
  });

  it("sizes the worker's cache from its heap, as the SDK does, up to 500", () => {
    // Heap limits as Node reports them: no bound on a 24 GB host, --max-old-space-size=384, a tiny heap.
    expect(defaultMaxCachedWorkflows(4144)).toBe(500);
    expect(defaultMaxCachedWorkflows(432)).toBe(135);
    expect(defaultMaxCachedWorkflows(150)).toBe(10);
  });

  it('reads every variable it documents', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'ops',
      TEMPORAL_TASK_QUEUE: 'tq',
      PORT: '8080',
      WATCHER_DATA_DIR: '/tmp/w',
      WATCHER_PRINCIPALS_FILE: '/etc/p.json',
      WATCHER_FACT_RETENTION: 'PT0S',
      WATCHER_LATE_WINDOW: 'P2D',
      WATCHER_MAX_LINEAGE: '3',
      WATCHER_MAX_CLOCK_SKEW: 'PT30S',
      WATCHER_WORKER_MAX_CACHED_WORKFLOWS: '50',
      WATCHER_WORKFLOW_BUNDLE: '/app/dist/workflow-bundle.js',
      WATCHER_QUOTA_OPEN_EXPECTATIONS: '20',
      WATCHER_QUOTA_RAISES_PER_MINUTE: '0',
      WATCHER_QUOTA_FACTS_PER_MINUTE: '30',
    });

    expect(config.temporal).toMatchObject({ address: 'temporal:7233', namespace: 'ops', taskQueue: 'tq' });
    expect(config).toMatchObject({
      port: 8080,
      dataDir: '/tmp/w',
      principalsFile: '/etc/p.json',
      factRetention: 'PT0S',
      lateWindow: 'P2D',
      maxLineage: 3,
      maxClockSkew: 'PT30S',
      maxCachedWorkflows: 50,
      workflowBundle: '/app/dist/workflow-bundle.js',
      quotas: { openExpectations: 20, raisesPerMinute: 0, factsPerMinute: 30 },
    });
  });

  it('refuses a quota that is not a whole number of at least 0, naming the variable', () => {
    const read = () => loadConfig({ WATCHER_QUOTA_RAISES_PER_MINUTE: '-1', WATCHER_QUOTA_FACTS_PER_MINUTE: '2.5' });

    expect(read).toThrow(/WATCHER_QUOTA_RAISES_PER_MINUTE: .*>=0/);
    expect(read).toThrow(/WATCHER_QUOTA_FACTS_PER_MINUTE: .*expected int/);
  });

  it('listens on the interface WATCHER_LISTEN_HOST names, all of them when unset, and refuses what is no IP address', () => {
    expect(loadConfig({}).listenHost).toBeUndefined();
    expect(loadConfig({ WATCHER_LISTEN_HOST: '127.0.0.1' }).listenHost).toBe('127.0.0.1');
    expect(loadConfig({ WATCHER_LISTEN_HOST: '::1' }).listenHost).toBe('::1');
    expect(() => loadConfig({ WATCHER_LISTEN_HOST: 'localhost' })).toThrow(
      /WATCHER_LISTEN_HOST.*must be an IP address/,
    );
  });

  it('names each bad variable and its rule', () => {
    const read = () =>
      loadConfig({ PORT: 'eighty', WATCHER_LATE_WINDOW: '30 days', WATCHER_MAX_CLOCK_SKEW: '5 minutes' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(/PORT: .*number/);
    expect(read).toThrow(/WATCHER_LATE_WINDOW: must be an ISO 8601 duration/);
    expect(read).toThrow(/WATCHER_MAX_CLOCK_SKEW: must be an ISO 8601 duration/);
  });

  it('takes an empty variable for an unset one', () => {
    const empty = ['TEMPORAL_API_KEY', 'TEMPORAL_UI_URL', 'WATCHER_MAX_LINEAGE', 'WATCHER_WORKFLOW_BUNDLE'];

    const config = loadConfig(Object.fromEntries(empty.map((name) => [name, ''])));

    expect(config.temporal.apiKey).toBeUndefined();
    expect(config.temporal.tls).toBeUndefined();
    expect(config.temporal.uiUrl).toBeUndefined();
    expect(config.maxLineage).toBe(10);
    expect(config.workflowBundle).toBeUndefined();
  });

  it('turns TLS on for an API key', () => {
    expect(loadConfig({ TEMPORAL_API_KEY: 'k' }).temporal.tls).toBeDefined();
    expect(loadConfig({}).temporal.tls).toBeUndefined();
  });
});
