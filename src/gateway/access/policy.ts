/**
 * The `access` section of the gateway configuration, resolved into one
 * policy: which rules apply to a caller (its scopes, claims, tier and
 * credential), and what they say of one item of one upstream (a tool, prompt,
 * resource or skill). Of the rules that apply, one whose `deny` names the item
 * denies it (deny beats allow), else one whose `allow` names it allows it,
 * else the default decides. A denied item that the same rules allow at a
 * higher tier is an upgrade: listed, and refused with UPGRADE_REQUIRED naming
 * the lowest such tier; any other denied item is hidden.
 *
 * Everything is checked when the gateway starts (CONFIG_INVALID with the JSON
 * Pointer of the member to fix), and compiled then: a decision walks the rules
 * once, compares strings and precompiled expressions, and allocates nothing
 * unless it finds an upgrade.
 */
import type { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { configInvalid } from '../config-invalid.ts';
import { type CarriedClaims, type ClaimValue, claimsHold } from './claims.ts';
import { type AccessPattern, compilePattern, patternMatches } from './patterns.ts';

/** Who calls, as rules see it. */
export interface AccessPrincipal {
  /** No credential authenticated the caller (stdio, HTTP without a token). */
  anonymous: boolean;
  /** The static bearer token's name, for a caller one authenticated. */
  token?: string;
  /** The issuer of the caller's OAuth access token. */
  issuer?: string;
  scopes: readonly string[];
  /** The claims the configuration names, as the caller's access token carries them. */
  claims?: CarriedClaims;
  tier: string;
}

/** What the policy says of one item for one caller. */
export interface AccessDecision {
  allowed: boolean;
  /** The rule that decided: its `name`, else its pointer (`/access/rules/2`); `default` when none did. */
  rule: string;
  /** Denied: the lowest tier above the caller's at which the same rules allow the item. */
  upgradeTier?: string;
}

/** `access` as the schema admits it. */
export interface RawAccess {
  rules?: RawAccessRule[];
  default?: 'allow' | 'deny';
}

export interface RawAccessRule {
  name?: string;
  when?: {
    scopes?: string[];
    claims?: Record<string, ClaimValue>;
    tier?: string | { exactly: string };
    token?: string;
    issuer?: string;
    anonymous?: boolean;
  };
  allow?: string[];
  deny?: string[];
}

/** What the rest of the configuration says that the rules are checked against. */
export interface AccessInputs {
  access: RawAccess;
  /** The configured upstreams' names. */
  upstreams: readonly string[];
  /** The tier order in effect: `tiers.order`, else the default order. */
  order: readonly string[];
  /** The tier of callers no credential authenticated. */
  anonymousTier: string;
  /** Every static token's name (those whose variable is unset included). */
  tokens: readonly string[];
  /** `auth.oauth.issuer`, when OAuth is configured. */
  issuer?: string;
}

interface Rule {
  id: string;
  scopes: readonly string[];
  claims: readonly (readonly [string, ClaimValue])[];
  /** The rank the caller's tier must reach (`atLeast`) or be (`exactly`); -1: any tier. */
  atLeast: number;
  exactly: number;
  token: string | undefined;
  issuer: string | undefined;
  anonymous: boolean | undefined;
  allow: readonly AccessPattern[];
  deny: readonly AccessPattern[];
  /** The decisions this rule makes, made once. */
  allows: AccessDecision;
  denies: AccessDecision;
}

const ALLOW_DEFAULT: AccessDecision = Object.freeze({ allowed: true, rule: 'default' });
const DENY_DEFAULT: AccessDecision = Object.freeze({ allowed: false, rule: 'default' });

export class AccessPolicy {
  readonly #rules: readonly Rule[];
  readonly #default: AccessDecision;
  readonly #order: readonly string[];
  readonly #ranks: ReadonlyMap<string, number>;
  /** Whether any rule looks at the tier: only then can a higher tier change a decision. */
  readonly #tierSensitive: boolean;
  /** The tier of callers no credential authenticated. */
  readonly anonymousTier: string;
  /** Every claim path a rule names: what an access token's claims are read for. */
  readonly claimPaths: readonly string[];
  /** What an item no applicable rule names gets. */
  readonly fallback: 'allow' | 'deny';
  /** Each rule as decisions name it, in order. */
  readonly ruleIds: readonly string[];

  constructor(
    rules: readonly Rule[],
    fallback: 'allow' | 'deny',
    order: readonly string[],
    anonymousTier: string,
  ) {
    this.#rules = rules;
    this.#default = fallback === 'allow' ? ALLOW_DEFAULT : DENY_DEFAULT;
    this.fallback = fallback;
    this.ruleIds = rules.map((rule) => rule.id);
    this.#order = order;
    this.#ranks = new Map(order.map((tier, rank) => [tier, rank]));
    this.#tierSensitive = rules.some((rule) => rule.atLeast >= 0 || rule.exactly >= 0);
    this.anonymousTier = anonymousTier;
    this.claimPaths = [...new Set(rules.flatMap((rule) => rule.claims.map(([path]) => path)))];
  }

  /** What the rules say of `name` (a tool's, prompt's or skill's name, or a URI) of `upstream` for `principal`. */
  decide(principal: AccessPrincipal, upstream: string, name: string): AccessDecision {
    const rank = this.#ranks.get(principal.tier) ?? -1;
    const decision = this.#evaluate(principal, rank, upstream, name);
    if (decision.allowed || !this.#tierSensitive || rank < 0) return decision;
    for (let higher = rank + 1; higher < this.#order.length; higher++) {
      if (this.#evaluate(principal, higher, upstream, name).allowed)
        return { allowed: false, rule: decision.rule, upgradeTier: this.#order[higher] as string };
    }
    return decision;
  }

  /** Whether a caller sees the item in lists: allowed, or allowed at a higher tier (so its hint is found). */
  visible(principal: AccessPrincipal, upstream: string, name: string): boolean {
    const decision = this.decide(principal, upstream, name);
    return decision.allowed || decision.upgradeTier !== undefined;
  }

  #evaluate(principal: AccessPrincipal, rank: number, upstream: string, name: string): AccessDecision {
    let allowedBy: AccessDecision | undefined;
    for (const rule of this.#rules) {
      if (!applies(rule, principal, rank)) continue;
      for (const pattern of rule.deny) if (patternMatches(pattern, upstream, name)) return rule.denies;
      if (allowedBy === undefined) {
        for (const pattern of rule.allow) {
          if (patternMatches(pattern, upstream, name)) {
            allowedBy = rule.allows;
            break;
          }
        }
      }
    }
    return allowedBy ?? this.#default;
  }
}

function applies(rule: Rule, principal: AccessPrincipal, rank: number): boolean {
  if (rule.anonymous !== undefined && rule.anonymous !== principal.anonymous) return false;
  if (rule.atLeast >= 0 && rank < rule.atLeast) return false;
  if (rule.exactly >= 0 && rank !== rule.exactly) return false;
  if (rule.token !== undefined && rule.token !== principal.token) return false;
  if (rule.issuer !== undefined && rule.issuer !== principal.issuer) return false;
  for (const scope of rule.scopes) if (!principal.scopes.includes(scope)) return false;
  return rule.claims.length === 0 || claimsHold(principal.claims, rule.claims);
}

/** Resolves and checks the `access` section; the values have already passed the schema. */
export function resolveAccess(inputs: AccessInputs, file?: string): AccessPolicy {
  const invalid = (message: string, path: readonly (string | number)[]): EnvelopeError =>
    configInvalid(message, path, file);
  const { order } = inputs;
  const rankOf = (tier: string, path: readonly (string | number)[]): number => {
    const rank = order.indexOf(tier);
    if (rank < 0)
      throw invalid(`names tier "${tier}", which is not one of ${order.join(', ')} (tiers.order)`, path);
    return rank;
  };
  const upstreams = new Set(inputs.upstreams);
  const patterns = (texts: readonly string[] | undefined, path: readonly (string | number)[]) =>
    (texts ?? []).map((text, index) => {
      const pattern = compilePattern(text);
      if (!pattern) throw invalid(`"${text}" is not an <upstream>/<name> pattern`, [...path, index]);
      if (typeof pattern.upstream === 'string' && !upstreams.has(pattern.upstream))
        throw invalid(
          `"${text}" names upstream "${pattern.upstream}", which is not configured (upstreams: ${inputs.upstreams.join(', ')})`,
          [...path, index],
        );
      return pattern;
    });
  const names = new Set<string>();
  const rules = (inputs.access.rules ?? []).map((raw, index): Rule => {
    const at = ['access', 'rules', index];
    const id = raw.name ?? encodePointer(at);
    if (names.has(id)) throw invalid(`names rule "${id}" a second time`, [...at, 'name']);
    names.add(id);
    const when = raw.when ?? {};
    if ((raw.allow ?? []).length === 0 && (raw.deny ?? []).length === 0)
      throw invalid('allows and denies nothing: give it `allow` or `deny` patterns', at);
    const tier = when.tier;
    if (when.token !== undefined && !inputs.tokens.includes(when.token))
      throw invalid(
        `names token "${when.token}", which is not one of auth.tokens (${inputs.tokens.join(', ') || 'none'})`,
        [...at, 'when', 'token'],
      );
    if (when.issuer !== undefined && when.issuer !== inputs.issuer)
      throw invalid(
        `names issuer "${when.issuer}", which is not auth.oauth.issuer${inputs.issuer === undefined ? ' (no auth.oauth is configured)' : ` (${inputs.issuer})`}`,
        [...at, 'when', 'issuer'],
      );
    return {
      id,
      scopes: when.scopes ?? [],
      claims: Object.entries(when.claims ?? {}),
      atLeast: typeof tier === 'string' ? rankOf(tier, [...at, 'when', 'tier']) : -1,
      exactly: typeof tier === 'object' ? rankOf(tier.exactly, [...at, 'when', 'tier', 'exactly']) : -1,
      token: when.token,
      issuer: when.issuer,
      anonymous: when.anonymous,
      allow: patterns(raw.allow, [...at, 'allow']),
      deny: patterns(raw.deny, [...at, 'deny']),
      allows: Object.freeze({ allowed: true, rule: id }),
      denies: Object.freeze({ allowed: false, rule: id }),
    };
  });
  return new AccessPolicy(rules, inputs.access.default ?? 'allow', order, inputs.anonymousTier);
}
