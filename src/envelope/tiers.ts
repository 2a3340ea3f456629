import { EnvelopeError } from '../errors/index.ts';
import type { NormalizedError, NormalizedResult, UpgradeHint } from './model.ts';

/**
 * Tiers and the feature gate. A gate knows which features each tier has (each
 * feature names the lowest tier that has it) and turns a denied feature into an
 * upgrade hint. Codecs carry the hints: `upgrade_hints` in scalpel-v1, a
 * `TIER.UPGRADE_HINT` warning in prov-v0.1, `error.details.upgrade_hints` in
 * hosted-v2 (a11y-v0.1 has no place for them and reports the loss).
 */

export const DEFAULT_TIERS = ['community', 'pro', 'enterprise'] as const;

export interface TierConfig {
  /** Tier names from lowest to highest. */
  tiers?: readonly string[];
  /** Feature → the lowest tier that has it. Features not listed are open to every tier. */
  features: Readonly<Record<string, string>>;
  /** Feature → the reason an upgrade hint gives; a generic one otherwise. */
  reasons?: Readonly<Record<string, string>>;
}

export interface GateDecision {
  feature: string;
  allowed: boolean;
  /** Present when the feature is denied. */
  hint?: UpgradeHint;
}

export class FeatureGate {
  readonly tiers: readonly string[];
  private readonly features: ReadonlyMap<string, string>;
  private readonly reasons: Readonly<Record<string, string>>;

  constructor(config: TierConfig) {
    this.tiers = config.tiers ?? DEFAULT_TIERS;
    if (this.tiers.length === 0 || new Set(this.tiers).size !== this.tiers.length)
      throw new EnvelopeError('USAGE_ERROR', 'Tier list must be non-empty and without duplicates');
    for (const [feature, tier] of Object.entries(config.features)) {
      if (!this.tiers.includes(tier)) {
        throw new EnvelopeError(
          'USAGE_ERROR',
          `Feature "${feature}" names tier "${tier}", which is not one of ${this.tiers.join(', ')}`,
        );
      }
    }
    this.features = new Map(Object.entries(config.features));
    this.reasons = config.reasons ?? {};
  }

  private rank(tier: string): number {
    const rank = this.tiers.indexOf(tier);
    if (rank < 0)
      throw new EnvelopeError('USAGE_ERROR', `Unknown tier "${tier}" (expected ${this.tiers.join(', ')})`);
    return rank;
  }

  /** The lowest tier that has the feature; the lowest tier of all for features nobody gated. */
  requiredTier(feature: string): string {
    return this.features.get(feature) ?? (this.tiers[0] as string);
  }

  allows(tier: string, feature: string): boolean {
    return this.rank(tier) >= this.rank(this.requiredTier(feature));
  }

  decide(tier: string, feature: string): GateDecision {
    if (this.allows(tier, feature)) return { feature, allowed: true };
    const required = this.requiredTier(feature);
    return {
      feature,
      allowed: false,
      hint: {
        feature,
        tier: required,
        reason: this.reasons[feature] ?? `${feature} is available from the ${required} tier`,
      },
    };
  }

  /** The features a tier has, in configuration order. */
  featuresOf(tier: string): string[] {
    return [...this.features.keys()].filter((feature) => this.allows(tier, feature));
  }

  /** Upgrade hints for the requested features the tier does not have. */
  hintsFor(tier: string, requested: readonly string[]): UpgradeHint[] {
    return requested.flatMap((feature) => {
      const { hint } = this.decide(tier, feature);
      return hint ? [hint] : [];
    });
  }
}

/** One-shot form of FeatureGate#decide. */
export function gateFeature(config: TierConfig | FeatureGate, tier: string, feature: string): GateDecision {
  const gate = config instanceof FeatureGate ? config : new FeatureGate(config);
  return gate.decide(tier, feature);
}

/** The model with the hints added to `meta.upgrade_hints` (and the tier recorded). */
export function withUpgradeHints(
  model: NormalizedResult,
  tier: string,
  hints: readonly UpgradeHint[],
): NormalizedResult {
  const meta = { ...model.meta, tier };
  if (hints.length > 0) meta.upgrade_hints = [...(model.meta?.upgrade_hints ?? []), ...hints];
  return { ...model, meta };
}

/** The error for a call that needs a feature its tier lacks (Code Scalpel's `upgrade_required`). */
export function upgradeRequiredError(hint: UpgradeHint): NormalizedError {
  return {
    code: 'UPGRADE_REQUIRED',
    message: hint.reason,
    retriable: false,
    details: { feature: hint.feature, tier: hint.tier },
  };
}
