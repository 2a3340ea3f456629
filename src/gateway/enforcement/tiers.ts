/**
 * The `tiers` sections of the gateway configuration: which tools need which
 * tier. They are resolved here into one rule table per upstream, keyed by the
 * tool's own name, with every tier name checked against the tier order, so that
 * nothing later can meet an unknown tier at call time.
 */
import { DEFAULT_TIERS } from '../../envelope/tiers.ts';
import type { EnvelopeError } from '../../errors/index.ts';
import { configInvalid } from '../config-invalid.ts';
import { NAMESPACE_SEPARATOR } from '../relay/namespace.ts';

/** The lowest tier that may call a tool, and what the upgrade hint says when a caller lacks it. */
export interface ToolTier {
  tier: string;
  reason?: string;
}

export interface GatewayTiers {
  /** Tier names, lowest first. */
  order: string[];
  /** The tier of callers no bearer token authenticated (stdio, HTTP without tokens). */
  anonymous: string;
}

export type RawToolTier = string | { tier: string; reason?: string };
export interface RawGatewayTiers {
  order?: string[];
  anonymous?: string;
  tools?: Record<string, RawToolTier>;
}
export interface RawUpstreamTiers {
  tools?: Record<string, RawToolTier>;
}

export interface TierInputs {
  tiers?: RawGatewayTiers;
  upstreams: readonly { name: string; dialect?: string; tiers?: RawUpstreamTiers }[];
  /** Every configured token, including optional ones whose variable is unset. */
  tokens: readonly { tier: string }[];
  /** `auth.oauth`: the tiers its scopes give, and the tier of a token none matches. */
  oauth?: { tiers?: readonly { tier: string }[]; defaultTier?: string };
}

export interface ResolvedTiers {
  /** Undefined when the configuration has no tiers section anywhere: no gate at all. */
  gateway: GatewayTiers | undefined;
  /** Per upstream: tool (its own name) → the rule. Upstream-level rules win over gateway-level ones. */
  tools: Map<string, Record<string, ToolTier>>;
}

/** Resolves and checks the tier rules; the values have already passed the schema. */
export function resolveTiers(raw: TierInputs, file?: string): ResolvedTiers {
  const invalid = (message: string, path: readonly (string | number)[]): EnvelopeError =>
    configInvalid(message, path, file);
  const tools = new Map<string, Record<string, ToolTier>>(raw.upstreams.map(({ name }) => [name, {}]));
  const configured =
    raw.tiers !== undefined || raw.upstreams.some((upstream) => upstream.tiers !== undefined);
  if (!configured) return { gateway: undefined, tools };

  const order = raw.tiers?.order ?? [...DEFAULT_TIERS];
  const known = (tier: string, path: readonly (string | number)[]): string => {
    if (order.includes(tier)) return tier;
    const where = raw.tiers?.order ? 'tiers.order' : 'the default order; set tiers.order to name your own';
    throw invalid(`names tier "${tier}", which is not one of ${order.join(', ')} (${where})`, path);
  };
  const anonymous = known(raw.tiers?.anonymous ?? (order[0] as string), ['tiers', 'anonymous']);
  raw.tokens.forEach((token, index) => {
    known(token.tier, ['auth', 'tokens', index, 'tier']);
  });
  raw.oauth?.tiers?.forEach((entry, index) => {
    known(entry.tier, ['auth', 'oauth', 'tiers', index, 'tier']);
  });
  if (raw.oauth?.defaultTier !== undefined) known(raw.oauth.defaultTier, ['auth', 'oauth', 'defaultTier']);

  const add = (upstream: string, tool: string, value: RawToolTier, path: (string | number)[]): void => {
    // Passthrough upstreams go through the same gate: a refusal is the gateway's own envelope.
    const own = tools.get(upstream) as Record<string, ToolTier>;
    if (typeof value === 'string') own[tool] = { tier: known(value, path) };
    else {
      const tier = known(value.tier, [...path, 'tier']);
      own[tool] = value.reason === undefined ? { tier } : { tier, reason: value.reason };
    }
  };
  const ownerOf = (name: string): { upstream: string; tool: string } | undefined => {
    if (raw.upstreams.length === 1) return { upstream: raw.upstreams[0]?.name as string, tool: name };
    // Split as the relay does: at the first separator.
    const at = name.indexOf(NAMESPACE_SEPARATOR);
    const upstream = at > 0 ? name.slice(0, at) : '';
    return tools.has(upstream) ? { upstream, tool: name.slice(at + NAMESPACE_SEPARATOR.length) } : undefined;
  };

  for (const [name, value] of Object.entries(raw.tiers?.tools ?? {})) {
    const path = ['tiers', 'tools', name];
    const owner = ownerOf(name);
    if (!owner) {
      const names = raw.upstreams.map((upstream) => upstream.name).join(', ');
      throw invalid(
        `names no configured upstream: with several upstreams, tools are named <upstream>${NAMESPACE_SEPARATOR}<tool> (upstreams: ${names})`,
        path,
      );
    }
    add(owner.upstream, owner.tool, value, path);
  }
  // Applied second, so an upstream's own rule wins over the gateway-wide one for the same tool.
  raw.upstreams.forEach((upstream, index) => {
    for (const [name, value] of Object.entries(upstream.tiers?.tools ?? {})) {
      add(upstream.name, name, value, ['upstreams', index, 'tiers', 'tools', name]);
    }
  });
  return { gateway: { order, anonymous }, tools };
}
