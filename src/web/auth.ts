/**
 * Bearer authentication: `Authorization: Bearer <token>` resolved to a principal, or 401.
 */
import type { Request, RequestHandler } from 'express';
import type { Principal, PrincipalStore } from '../auth/principals.js';
import { UnauthenticatedError } from '../service/errors.js';

const principalKey = Symbol('principal');

/** The principal of an `Authorization: Bearer <token>` header, or an UnauthenticatedError saying what is wrong. */
export function bearerPrincipal(principals: PrincipalStore, header: string | undefined): Principal {
  if (!header) throw new UnauthenticatedError('the request carries no Authorization header (Bearer token)');
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match) throw new UnauthenticatedError('the Authorization header is not of the form "Bearer <token>"');
  const principal = principals.authenticate(match[1]!);
  if (!principal) throw new UnauthenticatedError('the bearer token names no principal');
  return principal;
}

/** Middleware that authenticates the request or fails it with 401. */
export function authenticate(principals: PrincipalStore): RequestHandler {
  return (req, _res, next) => {
    const principal = bearerPrincipal(principals, req.get('authorization'));
    (req as Request & { [principalKey]?: Principal })[principalKey] = principal;
    next();
  };
}

/** The principal `authenticate` put on the request. */
export function principalOf(req: Request): Principal {
  const principal = (req as Request & { [principalKey]?: Principal })[principalKey];
  if (!principal) throw new UnauthenticatedError('not authenticated');
  return principal;
}
