/**
 * JSON may spell a lone UTF-16 surrogate (`"\ud800"`), which no UTF-8 text can hold: such a string reaching
 * Temporal as a workflow id or search attribute fails the gRPC call (INTERNAL), and a 500 is no answer to bad input.
 * The bridge refuses it with 400, naming where it is.
 */
import type { RequestHandler } from 'express';
import { joinPath, SchemaError, summarise, type FieldError } from '../service/errors.js';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const MAX_REPORTED = 20;

/** How deep a body may nest: far past any A2A object's shape, well short of what a recursive reader survives. */
export const MAX_BODY_DEPTH = 64;

interface Node {
  value: unknown;
  key?: PropertyKey;
  parent?: Node;
  depth?: number;
}

/** The path from the body's root to a node (built only for the few that are reported). */
function pathOf(node: Node, key?: PropertyKey): string {
  const segments: PropertyKey[] = key === undefined ? [] : [key];
  for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) segments.unshift(n.key);
  return joinPath(segments);
}

/** Paths of strings (values or keys) in `value` that hold a lone surrogate, and of objects past MAX_BODY_DEPTH. Iterative. */
export function illFormedStrings(value: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const stack: Node[] = [{ value }];
  while (stack.length > 0 && errors.length < MAX_REPORTED) {
    const node = stack.pop()!;
    const current = node.value;
    const depth = node.depth ?? 0;
    if (depth > MAX_BODY_DEPTH && typeof current === 'object' && current !== null) {
      errors.push({ path: pathOf(node), message: `nests deeper than ${MAX_BODY_DEPTH} levels` });
      continue;
    }
    if (typeof current === 'string') {
      if (LONE_SURROGATE.test(current))
        errors.push({ path: pathOf(node), message: 'must be well-formed Unicode (it holds a lone surrogate)' });
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--)
        stack.push({ value: current[i], key: i, parent: node, depth: depth + 1 });
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, child] of Object.entries(current)) {
        if (LONE_SURROGATE.test(key)) {
          errors.push({
            path: pathOf(node, key),
            message: 'the key must be well-formed Unicode (it holds a lone surrogate)',
          });
        }
        stack.push({ value: child, key, parent: node, depth: depth + 1 });
      }
    }
  }
  return errors;
}

/** Middleware after the JSON parser: 400 when any string of the body is not well-formed Unicode, or it nests too deep. */
export const wellFormedBody: RequestHandler = (req, _res, next) => {
  const errors = illFormedStrings(req.body);
  if (errors.length > 0) throw new SchemaError(summarise(errors, 'fields are invalid'), errors);
  next();
};
