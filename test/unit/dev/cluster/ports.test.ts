/**
 * Ports of the local cluster (dev/cluster/ports.ts): the asked-for ones kept, the rest free and all different, and the
 * membership ones under the SMALLINT bound of the server's cluster_membership table; one held by anything else refused.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ensurePortFree, ephemeralLow, freePorts } from '../../../../dev/cluster/ports.js';

const holders: net.Server[] = [];
afterEach(async () => {
  await Promise.all(holders.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server of somebody else's on a free port of `host`: the port it holds. */
function holdPort(host: string): Promise<number> {
  const server = net.createServer();
  holders.push(server);
  return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as net.AddressInfo).port)));
}

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

  it('chooses every free port below the kernel ephemeral range, where no outgoing connection takes it', async () => {
    const ports = await freePorts(Array.from({ length: 16 }, () => undefined));

    expect(ports.filter((port) => port >= ephemeralLow())).toEqual([]);
    expect(ports.every((port) => port >= 10_000)).toBe(true);
  });

  it('refuses a port something else listens on, naming the port and what it is for', async () => {
    const port = await holdPort('127.0.0.1');

    await expect(ensurePortFree(port, 'frontend')).rejects.toThrow(
      `port ${port} (frontend) is in use: something else listens on 127.0.0.1:${port} (another cluster or dev server?); stop it or choose another port`,
    );
  });

  it('refuses a port held on every address, not only on the loopback', async () => {
    const port = await holdPort('0.0.0.0');

    await expect(ensurePortFree(port, 'postgres')).rejects.toMatchObject({
      name: 'PortInUseError',
      message: expect.stringMatching(/^port \d+ \(postgres\) is in use: /),
    });
  });

  it('lets a free port through', async () => {
    const [port] = await freePorts([undefined]);

    await expect(ensurePortFree(port!, 'frontend')).resolves.toBeUndefined();
  });
});
