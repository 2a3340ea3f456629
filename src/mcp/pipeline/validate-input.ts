import { setImmediate as nextTurn } from 'node:timers/promises';
import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/json-value.ts';
import { a11yRequestInput } from '../../envelope/dialects/a11y-v01.ts';
import type { UpgradeHint } from '../../envelope/model.ts';
import { upgradeRequiredError } from '../../envelope/tiers.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { defaultRegistry } from '../../schemas/registry.ts';
import { envelopeV01For } from '../dialects.ts';
import type { CallContext } from './context.ts';
import { type Decision, invalidInput, onEnvelope, rejection } from './decision.ts';
import { invalidInputEntry, issueSummary, toolSchemaEntry } from './entries.ts';
import { validateOffThread } from './off-thread.ts';

/**
 * Stage 1, before the tool runs: the tier gate, then the arguments (size,
 * depth, canonical form when the record digests them, the tool's inputSchema).
 * Returns the answer when the call stops here.
 */
export async function checkInput(ctx: CallContext): Promise<Decision | undefined> {
  return deniedByTier(ctx) ?? (await refusedArguments(ctx));
}

/**
 * Arguments with more elements than this are checked a step at a time, the
 * event loop served between the steps: each step of a check of a full request
 * body takes tens of milliseconds, and other clients' messages wait for none
 * of them in turn.
 */
const YIELDING_ELEMENTS = 10_000;

/**
 * A call the caller's access rules refuse, before anything else: a hidden tool's
 * error is thrown as it is (the caller is answered as for a tool that does not
 * exist), one a higher tier would allow is UPGRADE_REQUIRED with its hint.
 */
export function deniedAccess(ctx: CallContext): Decision | undefined {
  const access = ctx.call.access;
  if (!access) return undefined;
  if ('hidden' in access) throw access.hidden;
  return upgradeRequired(ctx, [access.upgrade]);
}

/** A call whose features the caller's tier lacks: UPGRADE_REQUIRED with upgrade hints. */
export function deniedByTier(ctx: CallContext): Decision | undefined {
  const { gate, options } = ctx.settings;
  if (!gate) return undefined;
  const { tool } = ctx.call;
  const features = options.featuresOf?.(tool, ctx.call.arguments) ?? [tool.name];
  return upgradeRequired(ctx, gate.hintsFor(ctx.call.tier ?? ctx.settings.tier, features));
}

/** The UPGRADE_REQUIRED answer carrying `hints`; undefined without any. */
function upgradeRequired(ctx: CallContext, hints: readonly UpgradeHint[]): Decision | undefined {
  const [first] = hints;
  if (!first) return undefined;
  const envelope = envelopeV01For({
    ok: false,
    data: null,
    error: upgradeRequiredError(first),
    meta: { adapter: ctx.settings.adapter, request_id: ctx.requestId, upgrade_hints: [...hints] },
  });
  return onEnvelope(envelope, 'denied', 'rejected');
}

/** Counts array elements and object members, stopping as soon as the count passes `max`. */
function elementCount(value: unknown, max: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (++count > max) return count;
      if (child !== null && typeof child === 'object') stack.push(child);
    }
  }
  return count;
}

async function refusedArguments(ctx: CallContext): Promise<Decision | undefined> {
  const args = ctx.call.arguments;
  const { tool } = ctx.call;
  const { inputMode, options } = ctx.settings;
  const maxElements = options.maxArgumentElements;
  const counted = elementCount(args, maxElements ?? YIELDING_ELEMENTS);
  if (maxElements !== undefined && counted > maxElements) {
    return invalidInput(ctx, `arguments hold more than ${maxElements} elements`, '');
  }
  const large = counted > YIELDING_ELEMENTS;
  ctx.largeArguments = large;
  if (large) await nextTurn();
  // Deeper than the canonical form allows, the arguments could be neither digested nor
  // forwarded (serializing them overflows the stack): refused before the tool runs.
  const tooDeep = pathBeyondDepth(args);
  if (tooDeep) {
    return invalidInput(
      ctx,
      `arguments are nested deeper than ${MAX_NESTING_DEPTH} levels`,
      encodePointer(tooDeep),
    );
  }
  if (large) await nextTurn();
  // The schema before the canonical form: arguments it refuses are never put in canonical form.
  const bySchema = await checkSchema(ctx, args, tool, inputMode, large);
  if (bySchema) return bySchema;
  if (ctx.recordsDigests) {
    await ctx.prepareCanonicalArguments();
    // The record will digest the arguments: one with no canonical form is refused now, not after the tool ran.
    const canonical = ctx.canonicalArguments();
    if ('error' in canonical) {
      const { pointer } = canonical.error.details ?? {};
      return invalidInput(ctx, canonical.error.message, typeof pointer === 'string' ? pointer : '');
    }
  }
  return undefined;
}

async function checkSchema(
  ctx: CallContext,
  args: CallContext['call']['arguments'],
  tool: CallContext['call']['tool'],
  inputMode: CallContext['settings']['inputMode'],
  large: boolean,
): Promise<Decision | undefined> {
  if (inputMode === 'off' || !tool.inputSchema) return undefined;
  // The accessibility suite's request form carries the tool's input under `input`.
  const requestInput = a11yRequestInput(args);
  const validator = ctx.validatorFor(tool.inputSchema);
  if (validator instanceof EnvelopeError) {
    // Arguments that cannot be checked are refused only where checking is enforced;
    // otherwise the call goes on (the defect is reported where the tool is listed).
    if (inputMode !== 'enforce') return undefined;
    return rejection(ctx, 'internal_error', toolSchemaEntry(tool.name, 'inputSchema', validator));
  }
  const value = requestInput ?? args ?? {};
  // Large arguments are checked on the worker thread, by the same (default) registry.
  const checked =
    large && ctx.settings.registry === defaultRegistry()
      ? await validateOffThread(tool.inputSchema, value)
      : validator(value);
  if (checked.valid) return undefined;
  const { pointer, text } = issueSummary(checked.issues, requestInput === undefined ? '' : '/input');
  if (inputMode === 'enforce') return invalidInput(ctx, text, pointer);
  ctx.warnings.push(invalidInputEntry(text, pointer, 'warning'));
  return undefined;
}
