/**
 * The operator's page (`/ui/`): static files, no data. The page reads the API with the token typed on its tab, so
 * it shows exactly what that principal may read through the API, under the same roles.
 */
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';

const UI_DIR = fileURLToPath(new URL('../ui/', import.meta.url));

// Scripts and styles from the bridge only, no inline code or style, nothing framed: a value an agent wrote (ids,
// subjects, errors) is set as text and can neither run nor restyle the page; only the Temporal UI links leave the
// page, in a new tab that gets no handle on it.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function createUiRouter(): Router {
  const router = express.Router();
  router.use((_req, res, next) => {
    res.set({
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      // frame-ancestors' older twin, for browsers that do not read CSP's.
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-cache',
    });
    next();
  });
  router.use(express.static(UI_DIR, { index: 'index.html', redirect: true, dotfiles: 'ignore' }));
  return router;
}
