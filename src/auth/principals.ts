/**
 * Principals (DESIGN 4): who may call the bridge, with which roles. Tokens are kept as sha256 hex only and
 * compared in constant time; the embedded default generates a file with one random admin (+reader) token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

export const roles = ['agent', 'reporter', 'reader', 'admin'] as const;
export type Role = (typeof roles)[number];

const principalSchema = z
  .object({
    id: z.string().min(1),
    tokenSha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, { message: 'must be the hex sha256 of the bearer token (64 hex digits)' }),
    roles: z.array(z.enum(roles)).min(1),
    agent: z
      .object({
        cardUrl: z.url(),
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
  .refine(
    (file) => new Set(file.principals.map((p) => p.tokenSha256.toLowerCase())).size === file.principals.length,
    { message: 'two principals share one token', path: ['principals'] },
  );
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
  return {
    authenticate(token) {
      const presented = createHash('sha256').update(token, 'utf8').digest();
      let found: Principal | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(presented, entry.hash) && found === undefined) found = entry.principal;
      }
      return found;
    },
  };
}

/** Thrown when the principals file is missing or invalid; the message names the file and each bad field. */
export class PrincipalsFileError extends Error {
  override name = 'PrincipalsFileError';
}

/** Reads and validates a principals file. */
export async function loadPrincipals(file: string): Promise<PrincipalStore> {
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
  return createPrincipalStore(parsed.data);
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
