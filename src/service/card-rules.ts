/**
 * The rules of DESIGN 3.1 that read the raising agent's card: the extension is declared with valid params,
 * `lapseSkill` names a skill on the card, a raised kind is declared with a real `describes` and the same basis.
 * Pure functions: the card comes in parsed, broken rules go out as field errors.
 */
import type { AgentCardInfo } from '../a2a/card.js';
import { declarationParamsSchema, EXTENSION_URI, type DeclarationParams, type Expectation } from '../schemas/extension.js';
import { joinPath, type FieldError } from './errors.js';

const PLACEHOLDERS = new Set(['todo', 'tbd', '...', '…', 'placeholder']);

/** True when a `describes` says nothing: empty, or one of the placeholders (trimmed, case-insensitive). */
export const isPlaceholder = (text: string): boolean => {
  const t = text.trim().toLowerCase();
  return t === '' || PLACEHOLDERS.has(t);
};

/** The declaration as the rules read it, or the field errors that make it unusable. */
export type DeclarationCheck =
  | { ok: true; params: DeclarationParams; base: PropertyKey[] }
  | { ok: false; errors: FieldError[] };

/** Paths into the card are prefixed with `card/` so they cannot be mistaken for paths into the request. */
export function checkDeclaration(card: AgentCardInfo): DeclarationCheck {
  if (!card.declaration) {
    return {
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions',
          rule: 'extension-declared',
          message: `the agent's card does not declare the extension ${EXTENSION_URI} in capabilities.extensions`,
        },
      ],
    };
  }
  const base: PropertyKey[] = ['card', 'capabilities', 'extensions', card.declaration.index, 'params'];
  const parsed = declarationParamsSchema.safeParse(card.declaration.params);
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => ({
        path: joinPath([...base, ...issue.path]),
        rule: 'declaration-params',
        message: `the card's declaration of the extension is invalid: ${issue.message}`,
      })),
    };
  }
  const params = parsed.data;
  if (!card.skillIds.includes(params.lapseSkill)) {
    return {
      ok: false,
      errors: [
        {
          path: joinPath([...base, 'lapseSkill']),
          rule: 'lapse-skill',
          message: `lapseSkill '${params.lapseSkill}' names no skill on the card (skills: ${card.skillIds.join(', ') || 'none'})`,
        },
      ],
    };
  }
  return { ok: true, params, base };
}

/**
 * Checks one new expectation against the declaration: kind declared, its `describes` not a placeholder, basis equal.
 * A subject type other than the kind's `subjectType` is only a warning.
 */
export function checkKind(
  declaration: { params: DeclarationParams; base: PropertyKey[] },
  expectation: Expectation,
  path: PropertyKey[],
): { errors: FieldError[]; warnings: FieldError[] } {
  const errors: FieldError[] = [];
  const warnings: FieldError[] = [];
  const index = declaration.params.kinds.findIndex((k) => k.kind === expectation.kind);
  if (index === -1) {
    const declared = declaration.params.kinds.map((k) => k.kind).join(', ') || 'none';
    errors.push({
      path: joinPath([...path, 'kind']),
      rule: 'kind-declared',
      message: `kind '${expectation.kind}' is not declared on the agent's card (declared: ${declared})`,
    });
    return { errors, warnings };
  }
  const kind = declaration.params.kinds[index]!;
  const kindPath = [...declaration.base, 'kinds', index];
  if (isPlaceholder(kind.describes)) {
    errors.push({
      path: joinPath([...kindPath, 'describes']),
      rule: 'describes-placeholder',
      message: `the card's kind '${kind.kind}' has a placeholder describes ('${kind.describes}'); say what is expected`,
    });
  }
  if (expectation.basis !== kind.basis) {
    errors.push({
      path: joinPath([...path, 'basis']),
      rule: 'basis',
      message: `basis '${expectation.basis}' differs from the basis '${kind.basis}' declared for kind '${kind.kind}'`,
    });
  }
  if (expectation.subject.type !== kind.subjectType) {
    warnings.push({
      path: joinPath([...path, 'subject', 'type']),
      message: `subject.type '${expectation.subject.type}' differs from the subjectType '${kind.subjectType}' declared for kind '${kind.kind}'`,
    });
  }
  return { errors, warnings };
}
