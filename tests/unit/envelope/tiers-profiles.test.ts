import { describe, expect, it } from 'vitest';
import { convert } from '../../../src/envelope/convert.ts';
import { codecFor } from '../../../src/envelope/dialects/index.ts';
import { applyProfile, applyProfileToData, profileConfigFrom } from '../../../src/envelope/profiles.ts';
import {
  FeatureGate,
  gateFeature,
  upgradeRequiredError,
  withUpgradeHints,
} from '../../../src/envelope/tiers.ts';

const gate = new FeatureGate({
  features: { cross_file: 'pro', compliance_report: 'enterprise' },
  reasons: { cross_file: 'Cross-file analysis needs Pro' },
});

describe('FeatureGate', () => {
  it('allows features by tier and yields upgrade hints for the rest', () => {
    expect(gate.allows('community', 'basic')).toBe(true);
    expect(gate.allows('community', 'cross_file')).toBe(false);
    expect(gate.allows('enterprise', 'compliance_report')).toBe(true);
    expect(gate.featuresOf('pro')).toEqual(['cross_file']);
    expect(gate.hintsFor('community', ['cross_file', 'basic', 'compliance_report'])).toEqual([
      { feature: 'cross_file', tier: 'pro', reason: 'Cross-file analysis needs Pro' },
      {
        feature: 'compliance_report',
        tier: 'enterprise',
        reason: 'compliance_report is available from the enterprise tier',
      },
    ]);
    expect(gateFeature({ features: { x: 'pro' } }, 'pro', 'x').allowed).toBe(true);
  });

  it('refuses unknown tiers with a stable code', () => {
    expect(() => gate.allows('gold', 'x')).toThrow(expect.objectContaining({ code: 'USAGE_ERROR' }));
    expect(() => new FeatureGate({ features: { x: 'gold' } })).toThrow(
      expect.objectContaining({ code: 'USAGE_ERROR' }),
    );
  });

  it('puts the hints in upgrade_hints (scalpel-v1), warnings (prov-v0.1) and error details (hosted-v2)', () => {
    const hints = gate.hintsFor('community', ['cross_file']);
    const model = withUpgradeHints({ ok: true, tool: 'scan', data: {} }, 'community', hints);
    expect(codecFor('scalpel-v1').encode(model).value).toMatchObject({
      tier: 'community',
      upgrade_hints: hints,
    });
    expect(codecFor('prov-v0.1').encode(model).value).toMatchObject({
      warnings: [{ code: 'TIER.UPGRADE_HINT', details: { feature: 'cross_file', tier: 'pro' } }],
    });
    const denied = { ...model, ok: false, data: null, error: upgradeRequiredError(hints[0] as never) };
    expect(codecFor('hosted-v2').encode(denied).value).toMatchObject({
      error: { code: 'UPGRADE_REQUIRED', details: { upgrade_hints: hints } },
    });
    expect(codecFor('scalpel-v1').encode(denied).value).toMatchObject({
      error: { error_code: 'upgrade_required' },
    });
  });
});

describe('response profiles', () => {
  const data = {
    risk_level: 'high',
    findings: [],
    notes: null,
    stats: { skipped: 0, extra: {} },
    confidence: 1,
  };

  it('debug keeps everything, standard drops nulls and empties, minimal also defaults and include_only', () => {
    expect(applyProfileToData(data, 'debug')).toBe(data);
    expect(applyProfileToData(data, 'standard')).toEqual({
      risk_level: 'high',
      stats: { skipped: 0 },
      confidence: 1,
    });
    const config = {
      defaults: { skipped: 0, confidence: 1 },
      includeOnly: { scan: ['risk_level', 'stats'] },
    };
    expect(applyProfileToData(data, 'minimal', config)).toEqual({ risk_level: 'high' });
    expect(applyProfileToData({ ...data, extra: 'x' }, 'minimal', config, 'scan')).toEqual({
      risk_level: 'high',
    });
  });

  it('trims the payload only; the encoder still writes what the dialect requires', () => {
    const model = applyProfile({ ok: true, tool: 'scan', data }, 'minimal');
    const encoded = codecFor('scalpel-v1').encode(model).value as Record<string, unknown>;
    expect(encoded.upgrade_hints).toEqual([]);
    expect(encoded.error).toBeNull();
    expect(convert(encoded, 'scalpel-v1').value).toBe(encoded);
  });

  it('reads a profile configuration from JSON and refuses malformed ones', () => {
    expect(profileConfigFrom({ include_only: { scan: ['a'] }, defaults: { x: 0 } })).toEqual({
      includeOnly: { scan: ['a'] },
      defaults: { x: 0 },
    });
    for (const bad of [[], { include_only: { scan: 'a' } }, { defaults: 1 }, { extra: true }]) {
      expect(() => profileConfigFrom(bad)).toThrow(expect.objectContaining({ code: 'USAGE_ERROR' }));
    }
  });

  it('refuses an unknown profile', () => {
    expect(() => applyProfileToData(data, 'huge' as never)).toThrow(
      expect.objectContaining({ code: 'USAGE_ERROR' }),
    );
  });
});
