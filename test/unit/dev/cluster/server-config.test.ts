/**
 * The generated configuration of the local cluster (dev/cluster/server-config.ts), read back as the server reads
 * it: YAML text that parses to the object, with both stores on the one PostgreSQL and each service on its own ports.
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TEMPORAL_SERVICES, temporalServerConfig, toYaml } from '../../../../dev/cluster/server-config.js';

const input = {
  postgres: { host: '127.0.0.1', port: 25432, user: 'temporal', password: 'p"w: #x' },
  services: {
    history: { grpc: 20001, membership: 20002 },
    matching: { grpc: 20003, membership: 20004 },
    frontend: { grpc: 20005, membership: 20006 },
    worker: { grpc: 20007, membership: 20008 },
  },
  frontendHttpPort: 20009,
  numHistoryShards: 4,
  dynamicConfigFile: '/repo/deploy/temporal/dynamicconfig/watcher.yaml',
};

describe('cluster server configuration', () => {
  it('is YAML that parses back to the same object, quoting whatever a password holds', () => {
    const config = temporalServerConfig(input);

    const text = toYaml(config);

    expect(parse(text)).toEqual(config);
  });

  it('puts the default store and SQL visibility on the one PostgreSQL, in their own databases', () => {
    const { persistence } = temporalServerConfig(input) as {
      persistence: {
        datastores: Record<string, { sql: { pluginName: string; databaseName: string; connectAddr: string } }>;
      };
    };

    const stores = Object.values(persistence.datastores).map(({ sql }) => [
      sql.pluginName,
      sql.databaseName,
      sql.connectAddr,
    ]);

    expect(stores).toEqual([
      ['postgres12', 'temporal', '127.0.0.1:25432'],
      ['postgres12', 'temporal_visibility', '127.0.0.1:25432'],
    ]);
  });

  it('gives each of the four services its own gRPC and membership ports, and the frontend its HTTP port', () => {
    const { services } = temporalServerConfig(input) as { services: Record<string, { rpc: Record<string, unknown> }> };

    expect(Object.keys(services).sort()).toEqual([...TEMPORAL_SERVICES].sort());
    expect(services.frontend!.rpc).toEqual({
      grpcPort: 20005,
      membershipPort: 20006,
      bindOnLocalHost: true,
      httpPort: 20009,
    });
    expect(services.worker!.rpc).toEqual({ grpcPort: 20007, membershipPort: 20008, bindOnLocalHost: true });
  });

  it('writes empty maps and lists as flow collections', () => {
    expect(parse(toYaml({ a: {}, b: [], c: [{ d: 1 }, 'e'] }))).toEqual({ a: {}, b: [], c: [{ d: 1 }, 'e'] });
  });
});
