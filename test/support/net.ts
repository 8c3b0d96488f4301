/**
 * Ports and listening servers for tests, the benchmark and the demo: a free port, an Express app on a random
 * port of 127.0.0.1, and closing it with its open connections.
 */
import type { Server } from 'node:http';
import net from 'node:net';
import type { Express } from 'express';

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** True when something accepts connections on 127.0.0.1:port. */
export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A port P such that P and P + 1000 are both free (the embedded server's frontend and UI), both below Linux's
 * ephemeral range (32768 and up), where `freePort` and every listen(0) get theirs. A pair drawn inside it once took
 * the port `freePort` had just given another test's bridge, between the draw and the bridge's listen: that test's
 * /readyz then reached a Temporal frontend (an HTTP/2 answer, in a CI run of session 6).
 */
export async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 11000);
    if (!(await isListening(port)) && !(await isListening(port + 1000))) return port;
  }
  throw new Error('no free port pair');
}

/** `app` listening on 127.0.0.1 and a random port. */
export function listen(app: Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
    server.once('error', reject);
  });
}

/** The base URL of a server that `listen` started. */
export const urlOf = (server: Server): string => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

/** Closes `server`, its idle and open connections included. */
export function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}
