/**
 * Where the tests' workers find the agents they deliver lapses to (DESIGN 3.8: never in Temporal). In process, a
 * registry per task queue: each bridge a test starts registers its principals under its task queue, and the
 * worker of that queue looks an agent up in them, newest first. For a worker in a child process, a principals
 * file with the same agents.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AgentDirectory } from '../../activities/deliver-lapse.js';
import {
  createPrincipalStore,
  tokenSha256,
  type PrincipalsFile,
  type PrincipalStore,
  type Role,
} from '../../src/auth/principals.js';
import type { AgentRef } from '../../workflows/messages.js';

/** A principal of the bridge; `agent` principals need a card URL. */
export interface PrincipalSpec {
  id: string;
  roles: Role[];
  cardUrl?: string;
  authorization?: string;
}

/** The principals file's entries for `principals`; a principal without a token in `tokens` gets a random one. */
export function principalsFileOf(principals: PrincipalSpec[], tokens: Record<string, string> = {}): PrincipalsFile {
  return {
    principals: principals.map((p) => ({
      id: p.id,
      tokenSha256: tokenSha256(tokens[p.id] ?? `${p.id}-${randomUUID()}`),
      roles: p.roles,
      ...(p.cardUrl ? { agent: { cardUrl: p.cardUrl, authorization: p.authorization } } : {}),
    })),
  };
}

const registry = new Map<string, PrincipalStore[]>();

/** Makes the principals of `store` known to the workers of `taskQueue` (a later store wins for the same id). */
export function registerAgents(taskQueue: string, store: PrincipalStore): void {
  registry.set(taskQueue, [...(registry.get(taskQueue) ?? []), store]);
}

/**
 * Registers one agent on `taskQueue`, for tests that start expectations without a bridge, and answers the
 * reference an expectation input carries: its principal id only.
 */
export function registerAgent(
  taskQueue: string,
  agent: { id: string; cardUrl: string; authorization?: string },
): AgentRef {
  registerAgents(taskQueue, createPrincipalStore(principalsFileOf([{ ...agent, roles: ['agent'] }])));
  return { id: agent.id };
}

/** The agents of `taskQueue`'s bridges, looked up when a lapse is delivered (so a bridge started later counts). */
export function agentsOf(taskQueue: string): AgentDirectory {
  return {
    async contact(agentId) {
      const stores = registry.get(taskQueue) ?? [];
      for (let i = stores.length - 1; i >= 0; i--) {
        const principal = stores[i]!.byId(agentId);
        if (principal) return { cardUrl: principal.agent?.cardUrl, authorization: principal.agent?.authorization };
      }
      return undefined;
    },
  };
}

/**
 * Writes a principals file with `principals` to a new temporary directory (or over `file`, at once: a worker that
 * reloads it never reads half of it) and answers its path.
 */
export function writePrincipalsFile(
  principals: PrincipalSpec[],
  options: { tokens?: Record<string, string>; file?: string } = {},
): string {
  const file = options.file ?? path.join(mkdtempSync(path.join(os.tmpdir(), 'watcher-principals-')), 'principals.json');
  const next = `${file}.${randomUUID()}.tmp`;
  writeFileSync(next, `${JSON.stringify(principalsFileOf(principals, options.tokens), null, 2)}\n`, { mode: 0o600 });
  renameSync(next, file);
  return file;
}
