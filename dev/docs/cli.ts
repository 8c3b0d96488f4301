/**
 * `npm run docs`: writes docs/api-reference.md from the OpenAPI document (dev/docs/api-reference.ts).
 */
import { writeFileSync } from 'node:fs';
import { API_REFERENCE_PATH, apiReference } from './api-reference.js';

writeFileSync(API_REFERENCE_PATH, apiReference());
process.stdout.write(`wrote ${API_REFERENCE_PATH}\n`);
