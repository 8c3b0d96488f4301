/**
 * The rules of DESIGN 3.1 that read the raising agent's card. The declaration is checked as a whole, every kind
 * alike whichever is raised: valid params, `lapseSkill` and each kind's `skills` name skills on the card, each
 * `kind` is unique, each `describes` says something. A declaration that breaks any of them is refused for every
 * raise, with all its errors at once. Then a raised kind is declared, with the same basis.
 * Pure functions: the card comes in parsed, broken rules go out as field errors.
 */
import type { AgentCardInfo } from '../../activities/agent-card/card.js';
import {
  declarationParamsSchema,
  EXTENSION_URI,
  type DeclarationParams,
  type Expectation,
} from '../../core/schemas/extension.js';
import { joinPath, type FieldError } from './errors.js';

/**
 * Words a `describes` that says nothing is made of, compared trimmed, in any case, with trailing `.`, `:` or `!`
 * dropped: the marks of an unwritten text (`TODO`, `TBD`, `FIXME`, `WIP`), of no value (`n/a`, `none`, `null`,
 * `undefined`), and the words that stand in for one (`placeholder`, `description`, `lorem`, `foo`, `test`,
 * `example`, `asdf`, `dummy`). docs/api.md lists the same rule.
 */
export const PLACEHOLDER_WORDS: readonly string[] = [
  'todo',
  'tbd',
  'tba',
  'fixme',
  'wip',
  'placeholder',
  'n/a',
  'na',
  'none',
  'null',
  'nil',
  'undefined',
  'empty',
  'description',
  'describes',
  'text',
  'string',
  'lorem',
  'foo',
  'bar',
  'baz',
  'foobar',
  'test',
  'example',
  'sample',
  'asdf',
  'qwerty',
  'dummy',
  'blah',
  'something',
  'whatever',
  'changeme',
];
const WORDS = new Set(PLACEHOLDER_WORDS);

/** A whole text in the shape of a template's slot: `<…>`, `{{…}}`, `${…}`. */
const TEMPLATE_SLOT = /^(<[^<>]*>|\{\{.*\}\}|\$\{.*\})$/s;

/**
 * True when a `describes` says nothing: empty; no letter or digit at all (`-`, `...`, `…`, `?`); one character
 * repeated (`x`, `xxx`); one of PLACEHOLDER_WORDS; lorem ipsum; or a template's slot left unfilled (`<describe it>`,
 * `{{describes}}`). Trimmed and in any case.
 */
export const isPlaceholder = (text: string): boolean => {
  const t = text.trim().toLowerCase();
  if (!/[\p{L}\p{N}]/u.test(t)) return true;
  if ([...t].every((c) => c === t[0])) return true;
  return WORDS.has(t.replace(/[.:!]+$/, '')) || t.startsWith('lorem ipsum') || TEMPLATE_SLOT.test(t);
};

/** The declaration as the rules read it, or the field errors that make it unusable. */
export type DeclarationCheck =
  { ok: true; params: DeclarationParams; base: PropertyKey[] } | { ok: false; errors: FieldError[] };

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
  const errors = [...lapseSkillErrors(card, params, base), ...kindErrors(card, params, base)];
  return errors.length > 0 ? { ok: false, errors } : { ok: true, params, base };
}

const skillList = (card: AgentCardInfo) => card.skillIds.join(', ') || 'none';

/** `lapseSkill` MUST name a skill on the card (the seed's declaration). */
function lapseSkillErrors(card: AgentCardInfo, params: DeclarationParams, base: PropertyKey[]): FieldError[] {
  if (card.skillIds.includes(params.lapseSkill)) return [];
  return [
    {
      path: joinPath([...base, 'lapseSkill']),
      rule: 'lapse-skill',
      message: `lapseSkill '${params.lapseSkill}' names no skill on the card (skills: ${skillList(card)})`,
    },
  ];
}

/**
 * Every kind, in the order declared: `kind` unique within the declaration (a second one would never be read),
 * `describes` neither empty nor a placeholder, and each of `skills` a skill on the card (a task of a skill the card
 * does not have can never raise the kind). Whether the raising task ran one of `skills` cannot be checked: an A2A
 * task does not say which skill it ran.
 */
function kindErrors(card: AgentCardInfo, params: DeclarationParams, base: PropertyKey[]): FieldError[] {
  const errors: FieldError[] = [];
  const first = new Map<string, number>();
  params.kinds.forEach((kind, k) => {
    const at = [...base, 'kinds', k];
    const earlier = first.get(kind.kind);
    if (earlier === undefined) first.set(kind.kind, k);
    else {
      errors.push({
        path: joinPath([...at, 'kind']),
        rule: 'kind-unique',
        message: `kind '${kind.kind}' is declared twice (kinds/${earlier} and kinds/${k}); a kind is unique within one declaration`,
      });
    }
    if (isPlaceholder(kind.describes)) {
      const said =
        kind.describes.trim() === '' ? 'an empty describes' : `a placeholder describes ('${kind.describes}')`;
      errors.push({
        path: joinPath([...at, 'describes']),
        rule: 'describes-placeholder',
        message: `the card's kind '${kind.kind}' has ${said}; say what is expected`,
      });
    }
    kind.skills?.forEach((skill, s) => {
      if (card.skillIds.includes(skill)) return;
      errors.push({
        path: joinPath([...at, 'skills', s]),
        rule: 'kind-skills',
        message: `the card's kind '${kind.kind}' names skill '${skill}', which is not a skill on the card (skills: ${skillList(card)})`,
      });
    });
  });
  return errors;
}

/**
 * Checks one new expectation against a declaration `checkDeclaration` accepted: kind declared, basis equal.
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
