/**
 * Ports of the local cluster (src/cluster/ports.ts): the asked-for ones kept, the rest free and all different, and the
 * membership ones under the SMALLINT bound of the server's cluster_membership table.
 */
import { describe, expect, it } from 'vitest';
import { freePorts } from '../../src/cluster/ports.js';

describe('cluster ports', () => {
  it('keeps the ports asked for and fills the others with distinct free ports', async () => {
    const ports = await freePorts([17_233, undefined, undefined, { below: 32_768 }]);

    expect(ports[0]).toBe(17_233);
    expect(new Set(ports).size).toBe(4);
  });

  it('puts a bounded port under its bound', async () => {
    const ports = await freePorts(Array.from({ length: 8 }, () => ({ below: 32_768 })));

    expect(ports.every((port) => port < 32_768)).toBe(true);
  });
});
