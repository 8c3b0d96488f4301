/**
 * Temporal's codec server protocol on the bridge (`POST /codec/decode`, `/codec/encode`), for readers and admins by
 * bearer token or by the session cookie `/codec/login` sets (docs/operations.md, "Reading encrypted payloads").
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { hasRole, type Principal, type PrincipalStore } from '../auth/principals.js';
import {
  ForbiddenError,
  joinPath,
  SchemaError,
  summarise,
  UnauthenticatedError,
  UndecryptablePayloadError,
  UnsupportedMediaTypeError,
} from '../service/errors.js';
import { PayloadDecryptionError } from '../temporal/encryption-codec.js';
import { bearerPrincipal } from '../web/auth.js';

/** Where the app mounts the router; the endpoint an operator gives the UI is `<bridge>/codec`. */
export const CODEC_PATH = '/codec';
/** The cookie `/codec/login` sets: the bearer token itself, sent back by the browser to `/codec/*` only. */
export const CODEC_SESSION_COOKIE = 'watcher_codec_session';
/** How long a browser keeps the session cookie. */
const SESSION_SECONDS = 12 * 3600;
/** Request headers the UI sends (Authorization-Extras: its OIDC id token, with "Pass the user access token"). */
const ALLOWED_HEADERS = 'Authorization, Authorization-Extras, Content-Type, X-Namespace';

export interface CodecRouterDeps {
  codec: PayloadCodec;
  /** The one namespace whose payloads this bridge's keys seal; a request naming another (X-Namespace) is refused. */
  namespace: string;
  principals: PrincipalStore;
  /** Browser origins (the Temporal UI's) that may call decode and encode; none by default. */
  corsOrigins: readonly string[];
}

const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, { message: 'must be base64' });
/** A Payload in protobuf JSON; other fields (e.g. externalPayloads) are kept and handed back on a pass-through. */
const payloadJsonSchema = z.looseObject({ metadata: z.record(z.string(), base64).optional(), data: base64.optional() });
const codecBodySchema = z.strictObject({ payloads: z.array(payloadJsonSchema) });
type PayloadJson = z.infer<typeof payloadJsonSchema>;

const fromBase64 = (value: string) => new Uint8Array(Buffer.from(value, 'base64'));
const toBase64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('base64');

function fromJson(json: PayloadJson): Payload {
  const metadata = Object.fromEntries(
    Object.entries(json.metadata ?? {}).map(([key, value]) => [key, fromBase64(value)]),
  );
  return { metadata, data: fromBase64(json.data ?? '') };
}

function toJson(payload: Payload): PayloadJson {
  const metadata = Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, toBase64(value)]),
  );
  return { metadata, data: toBase64(payload.data) };
}

/** The token of the session cookie, if the request carries one. */
function sessionToken(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CODEC_SESSION_COOKIE) {
      try {
        return decodeURIComponent(value.join('=')) || undefined;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Reader or admin: the roles that may read what expectations carry, and so their payloads. */
function assertMayUseCodec(principal: Principal): void {
  if (!hasRole(principal, 'reader') && !hasRole(principal, 'admin')) {
    throw new ForbiddenError(`principal '${principal.id}' may not use the codec endpoint (needs reader or admin)`);
  }
}

/** The codec endpoint's router, mounted at CODEC_PATH. */
/** CORS for an allowed origin; another browser origin is refused before anything else is read. */
function corsFor(corsOrigins: readonly string[]): RequestHandler {
  const origins = new Set(corsOrigins);
  return (req, res, next) => {
    res.vary('Origin');
    const origin = req.get('origin');
    if (origin !== undefined) {
      if (!origins.has(origin)) {
        const allowed = corsOrigins.length > 0 ? corsOrigins.join(', ') : 'none';
        throw new ForbiddenError(
          `origin '${origin}' may not call the codec endpoint (WATCHER_CODEC_CORS_ORIGINS allows ${allowed})`,
        );
      }
      res.set('Access-Control-Allow-Origin', origin);
      res.set('Access-Control-Allow-Credentials', 'true');
    }
    next();
  };
}

/** The caller: bearer token first (a wrong one is not rescued by a cookie), else the session cookie. */
function callerOf(principals: CodecRouterDeps['principals'], req: Request): Principal {
  const header = req.get('authorization');
  const session = sessionToken(req);
  if (header !== undefined || session === undefined) return bearerPrincipal(principals, header);
  const principal = principals.authenticate(session);
  if (!principal)
    throw new UnauthenticatedError(
      `the codec session names no principal any more: sign in again at ${CODEC_PATH}/login`,
    );
  return principal;
}

const codecJson: RequestHandler[] = [
  (req, _res, next) => {
    if (req.is('application/json') === false) {
      throw new UnsupportedMediaTypeError(
        `Content-Type must be application/json, not '${req.get('content-type') ?? 'none'}'`,
      );
    }
    next();
  },
  express.json({ limit: '1mb', type: 'application/json' }),
];

/** One codec operation on a request's payloads: a payload the codec hands back as it was goes back exactly as it came. */
async function convert(deps: CodecRouterDeps, operation: 'decode' | 'encode', req: Request, res: express.Response) {
  assertMayUseCodec(callerOf(deps.principals, req));
  const namespace = req.get('x-namespace');
  if (namespace !== undefined && namespace !== deps.namespace) {
    throw new ForbiddenError(`this codec endpoint serves namespace '${deps.namespace}', not '${namespace}'`);
  }
  const parsed = codecBodySchema.safeParse(req.body ?? {});
  if (!parsed.success) {
    const errors = parsed.error.issues.map((issue) => ({ path: joinPath(issue.path), message: issue.message }));
    throw new SchemaError(summarise(errors, 'fields are invalid'), errors);
  }
  const payloads = parsed.data.payloads.map(fromJson);
  let converted: Payload[];
  try {
    converted = operation === 'decode' ? await deps.codec.decode(payloads) : await deps.codec.encode(payloads);
  } catch (error) {
    if (error instanceof PayloadDecryptionError) throw new UndecryptablePayloadError(error.message);
    throw error;
  }
  // A payload the codec handed back as it was (not encrypted) goes back exactly as it came.
  res.json({
    payloads: converted.map((payload, i) => (payload === payloads[i] ? parsed.data.payloads[i] : toJson(payload))),
  });
}

export function createCodecRouter(deps: CodecRouterDeps): express.Router {
  const router = express.Router();

  const cors = corsFor(deps.corsOrigins);

  for (const operation of ['decode', 'encode'] as const) {
    router.options(`/${operation}`, cors, (_req, res) => {
      res.set('Access-Control-Allow-Methods', 'POST');
      res.set('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.set('Access-Control-Max-Age', '600');
      res.status(204).end();
    });

    router.post(`/${operation}`, cors, ...codecJson, (req, res) => convert(deps, operation, req, res));
  }

  router.get('/login', (_req, res) => {
    res.type('html').send(loginPage());
  });

  // A form post from loginPage: the token is checked (401, 403) before it is kept in the browser.
  router.post('/login', express.urlencoded({ extended: false, limit: '16kb' }), (req, res) => {
    if (req.is('application/x-www-form-urlencoded') !== 'application/x-www-form-urlencoded') {
      throw new UnsupportedMediaTypeError(
        'sign in with the form of GET /codec/login (application/x-www-form-urlencoded)',
      );
    }
    const token = typeof req.body?.token === 'string' ? req.body.token.trim() : '';
    const principal = bearerPrincipal(deps.principals, token ? `Bearer ${token}` : undefined);
    assertMayUseCodec(principal);
    setSessionCookie(req, res, token);
    res.type('html').send(signedInPage(principal.id));
  });

  router.post('/logout', (req, res) => {
    res.clearCookie(CODEC_SESSION_COOKIE, cookieOptions(req));
    res.status(204).end();
  });

  return router;
}

/**
 * Over HTTPS the cookie is `SameSite=None; Secure`, so that a UI on another site (e.g. Temporal Cloud's) sends it;
 * over plain HTTP it is `SameSite=Strict` and reaches the bridge only from a UI on the same site (same host, any
 * port). Either way it is HttpOnly and goes to the codec paths only.
 */
function cookieOptions(req: Request) {
  return {
    httpOnly: true,
    path: req.baseUrl || CODEC_PATH,
    ...(req.secure ? { secure: true, sameSite: 'none' as const } : { sameSite: 'strict' as const }),
  };
}

function setSessionCookie(req: Request, res: Response, token: string): void {
  res.cookie(CODEC_SESSION_COOKIE, token, { ...cookieOptions(req), maxAge: SESSION_SECONDS * 1000 });
}

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>${title}</h1>
${body}
</body></html>
`;
}

function loginPage(): string {
  return page(
    'Codec endpoint of the expectations watcher',
    `<p>Sign this browser in with a bearer token of a principal with the reader or admin role. The token is kept in an
HttpOnly cookie that only this bridge's codec endpoint receives; the Temporal UI sends it when its Codec Server
setting "Include cross-origin credentials" is on.</p>
<form method="post" action="login">
<label>Bearer token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button>
</form>`,
  );
}

function signedInPage(principalId: string): string {
  return page(
    'Signed in to the codec endpoint',
    `<p>This browser may now decode payloads as <strong id="principal">${escapeHtml(principalId)}</strong> for
${SESSION_SECONDS / 3600} hours. In the Temporal UI, open the Codec Server settings, choose the browser setting, enter
this endpoint (this address without <code>/login</code>) and turn on "Include cross-origin credentials".</p>`,
  );
}
