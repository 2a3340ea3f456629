import { isJsonObject } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';
import type { NormalizedResult } from './model.ts';

/**
 * Response profiles, after Code Scalpel's response configuration: how much of
 * a tool's payload goes back to the caller (and into its context window).
 * - `debug`: everything, unchanged;
 * - `standard`: members that are null, empty arrays or empty objects are dropped;
 * - `minimal`: as standard, and members equal to their configured default are
 *   dropped, and a tool's `include_only` list keeps only those top-level members.
 * Profiles trim the payload (`data`) only: envelope members a dialect requires
 * are written by its encoder whatever the profile.
 */

export const PROFILES = ['minimal', 'standard', 'debug'] as const;
export type Profile = (typeof PROFILES)[number];

export interface ProfileConfig {
  /** Tool → the only top-level payload members `minimal` keeps. */
  includeOnly?: Readonly<Record<string, readonly string[]>>;
  /** Member name → its default value; `minimal` drops members equal to it (at any depth). */
  defaults?: Readonly<Record<string, unknown>>;
}

/**
 * A profile configuration read from JSON (`{"include_only": {tool: [members]},
 * "defaults": {member: value}}`), checked member by member.
 */
export function profileConfigFrom(value: unknown): ProfileConfig {
  if (!isJsonObject(value))
    throw new EnvelopeError('USAGE_ERROR', 'A profile configuration must be a JSON object');
  const unknown = Object.keys(value).filter((key) => key !== 'include_only' && key !== 'defaults');
  if (unknown.length > 0)
    throw new EnvelopeError('USAGE_ERROR', `Unknown profile configuration member(s): ${unknown.join(', ')}`);
  const config: ProfileConfig = {};
  if (value.include_only !== undefined) {
    const lists = value.include_only;
    const valid =
      isJsonObject(lists) &&
      Object.values(lists).every(
        (list) => Array.isArray(list) && list.every((item) => typeof item === 'string'),
      );
    if (!valid)
      throw new EnvelopeError('USAGE_ERROR', 'include_only must map tool names to arrays of member names');
    config.includeOnly = lists as Record<string, string[]>;
  }
  if (value.defaults !== undefined) {
    if (!isJsonObject(value.defaults))
      throw new EnvelopeError('USAGE_ERROR', 'defaults must map member names to their default values');
    config.defaults = value.defaults;
  }
  return config;
}

export function isProfile(value: unknown): value is Profile {
  return typeof value === 'string' && (PROFILES as readonly string[]).includes(value);
}

function isEmpty(value: unknown): boolean {
  if (value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return isJsonObject(value) && Object.keys(value).length === 0;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Depth-first, so an object emptied by trimming is itself dropped. Array elements are kept. */
function trim(value: unknown, defaults: Readonly<Record<string, unknown>> | undefined): unknown {
  if (Array.isArray(value)) return value.map((item) => trim(item, defaults));
  if (!isJsonObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    const trimmed = trim(member, defaults);
    if (isEmpty(trimmed)) continue;
    if (defaults && Object.hasOwn(defaults, key) && sameJson(trimmed, defaults[key])) continue;
    Object.defineProperty(out, key, { value: trimmed, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A payload trimmed to a profile. `tool` selects the include_only list. */
export function applyProfileToData(
  data: unknown,
  profile: Profile,
  config: ProfileConfig = {},
  tool?: string,
): unknown {
  if (!isProfile(profile))
    throw new EnvelopeError(
      'USAGE_ERROR',
      `Unknown profile "${String(profile)}" (expected ${PROFILES.join(', ')})`,
    );
  if (profile === 'debug') return data;
  let trimmed = trim(data, profile === 'minimal' ? config.defaults : undefined);
  const only = tool === undefined ? undefined : config.includeOnly?.[tool];
  if (profile === 'minimal' && only !== undefined && isJsonObject(trimmed)) {
    const source = trimmed;
    trimmed = Object.fromEntries(
      only.filter((key) => Object.hasOwn(source, key)).map((key) => [key, source[key]]),
    );
  }
  return trimmed;
}

/** The model with its payload trimmed to the profile. */
export function applyProfile(
  model: NormalizedResult,
  profile: Profile,
  config: ProfileConfig = {},
): NormalizedResult {
  const data = applyProfileToData(model.data, profile, config, model.tool);
  return data === model.data ? model : { ...model, data };
}
