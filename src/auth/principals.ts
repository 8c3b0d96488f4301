/**
 * Principals (DESIGN 4): who may call the bridge, with which roles. Tokens are kept as sha256 hex only and
 * compared in constant time; the embedded default generates a file with one random admin (+reader) token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { MAX_LENGTH } from '../../core/limits.js';

export const roles = ['agent', 'reporter', 'reader', 'admin'] as const;
export type Role = (typeof roles)[number];

const principalSchema = z
  .object({
    // The source of its facts and the ExpectationAgent of its raises, kept in routers and records: bounded, and
    // printable ASCII (core/limits.ts counts it at 2 bytes a character as JSON).
    id: z
      .string()
      .min(1)
      .max(MAX_LENGTH.principalId, { message: `must be at most ${MAX_LENGTH.principalId} characters` })
      .regex(/^[\x21-\x7e]+$/, { message: 'must be printable ASCII without spaces' }),
    tokenSha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, { message: 'must be the hex sha256 of the bearer token (64 hex digits)' }),
    roles: z.array(z.enum(roles)).min(1),
    agent: z
      .object({
        cardUrl: z
          .url()
          .refine((value) => /^https?:$/.test(new URL(value).protocol), { message: 'must be an http or https URL' })
          .refine((value) => new URL(value).username === '' && new URL(value).password === '', {
            message: 'must not name a user or password; the credential goes in agent.authorization',
          }),
        /** The Authorization header value the watcher sends to the agent (card fetch, lapse tasks). */
        authorization: z.string().optional(),
      })
      .optional(),
  })
  .refine((p) => !p.roles.includes('agent') || p.agent !== undefined, {
    message: 'a principal with the agent role needs agent.cardUrl',
    path: ['agent'],
  });

export const principalsFileSchema = z
  .object({ principals: z.array(principalSchema) })
  .refine((file) => new Set(file.principals.map((p) => p.id)).size === file.principals.length, {
    message: 'principal ids must be unique',
    path: ['principals'],
  })
  .refine((file) => new Set(file.principals.map((p) => p.tokenSha256.toLowerCase())).size === file.principals.length, {
    message: 'two principals share one token',
    path: ['principals'],
  });
export type PrincipalsFile = z.infer<typeof principalsFileSchema>;

/** An authenticated caller. */
export interface Principal {
  id: string;
  roles: readonly Role[];
  agent?: { cardUrl: string; authorization?: string };
}

export interface PrincipalStore {
  /** The principal whose token this is, or undefined. Takes the same time whether it matches or not. */
  authenticate(token: string): Principal | undefined;
  /** The principal with this id (the worker finds an agent's card URL and credential by it), or undefined. */
  byId(id: string): Principal | undefined;
}

/** True when the principal holds the role. */
export const hasRole = (principal: Principal, role: Role): boolean => principal.roles.includes(role);

/** The hex sha256 of a token, as the principals file stores it. */
export const tokenSha256 = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** Builds a store from parsed principals. Every entry is compared, so a match early in the list is not faster. */
export function createPrincipalStore(file: PrincipalsFile): PrincipalStore {
  const entries = file.principals.map((p) => ({
    hash: Buffer.from(p.tokenSha256, 'hex'),
    principal: Object.freeze({ id: p.id, roles: Object.freeze([...p.roles]), agent: p.agent }) as Principal,
  }));
  const ids = new Map(entries.map((entry) => [entry.principal.id, entry.principal]));
  return {
    authenticate(token) {
      const presented = createHash('sha256').update(token, 'utf8').digest();
      let found: Principal | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(presented, entry.hash) && found === undefined) found = entry.principal;
      }
      return found;
    },
    byId: (id) => ids.get(id),
  };
}

/** Thrown when the principals file is missing or invalid; the message names the file and each bad field. */
export class PrincipalsFileError extends Error {
  override name = 'PrincipalsFileError';
}

/** Reads and validates a principals file. */
export async function loadPrincipals(file: string): Promise<PrincipalStore> {
  return createPrincipalStore(await readPrincipalsFile(file));
}

async function readPrincipalsFile(file: string): Promise<PrincipalsFile> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new PrincipalsFileError(`${file}: ${(error as Error).message}`);
  }
  const parsed = principalsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new PrincipalsFileError(`${file}: invalid principals file\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** A principal store that follows its file: tokens and agent credentials rotate without a restart. */
export interface ReloadingPrincipalStore extends PrincipalStore {
  /** Reads the file again when it changed since the last read (size or mtime); a broken file keeps the last good one. */
  refresh(): Promise<void>;
  /** Refreshes every `intervalMs` in the background until `close`. */
  watch(intervalMs: number): void;
  close(): void;
}

/**
 * Loads the principals file (a broken file at start is an error) and reloads it when it changes. A change that
 * does not parse is reported through `onError` and ignored, so a half-written file never locks everybody out.
 */
export async function loadReloadingPrincipals(
  file: string,
  options: { onError?: (error: PrincipalsFileError) => void; onReload?: () => void } = {},
): Promise<ReloadingPrincipalStore> {
  const version = async () => {
    const s = await stat(file);
    return `${s.size}:${s.mtimeMs}`;
  };
  let seen = await version();
  let current = createPrincipalStore(await readPrincipalsFile(file));
  let timer: NodeJS.Timeout | undefined;
  let refreshing: Promise<void> | undefined;
  /** The version that failed to load, reported once. */
  let failed: string | undefined;

  async function reload(): Promise<void> {
    let now: string | undefined;
    try {
      now = await version();
      if (now === seen || now === failed) return;
      current = createPrincipalStore(await readPrincipalsFile(file));
      seen = now;
      failed = undefined;
      options.onReload?.();
    } catch (error) {
      if (now !== undefined && now === failed) return;
      failed = now;
      const wrapped =
        error instanceof PrincipalsFileError ? error : new PrincipalsFileError(`${file}: ${(error as Error).message}`);
      options.onError?.(wrapped);
    }
  }

  const refresh = (): Promise<void> => {
    // Concurrent callers (many lapses due at once) share one stat.
    refreshing ??= reload().finally(() => (refreshing = undefined));
    return refreshing;
  };

  return {
    authenticate: (token) => current.authenticate(token),
    byId: (id) => current.byId(id),
    refresh,
    watch(intervalMs) {
      timer ??= setInterval(() => void refresh(), intervalMs).unref();
    },
    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

/**
 * The embedded default: makes sure `<dataDir>/principals.json` exists. When it does not, writes one with a random
 * admin token (also reader and reporter, so an operator can report facts by hand), stored as its sha256 with file mode 0600, and returns the token (the only time it is seen).
 */
export async function ensurePrincipalsFile(dataDir: string): Promise<{ file: string; generatedToken?: string }> {
  const file = path.join(dataDir, 'principals.json');
  await mkdir(dataDir, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  const content: PrincipalsFile = {
    principals: [{ id: 'admin', tokenSha256: tokenSha256(token), roles: ['admin', 'reader', 'reporter'] }],
  };
  try {
    // `wx`: never overwrite a file someone already has (or a concurrent start just wrote).
    await writeFile(file, `${JSON.stringify(content, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { file };
    throw error;
  }
  return { file, generatedToken: token };
}

/**
 * The agents' contacts for lapse delivery, from a principal store: a reloading store is refreshed first, so a
 * rotated token or a moved card reaches expectations raised before the change.
 */
export function agentDirectory(store: PrincipalStore | ReloadingPrincipalStore) {
  return {
    async contact(agentId: string): Promise<{ cardUrl?: string; authorization?: string } | undefined> {
      if ('refresh' in store) await store.refresh();
      const principal = store.byId(agentId);
      return principal
        ? { cardUrl: principal.agent?.cardUrl, authorization: principal.agent?.authorization }
        : undefined;
    },
  };
}
