/**
 * Return modes at the gateway's edge. `_meta.return_mode` is the gateway's:
 * it is taken out of a call before the call is forwarded, so upstreams never
 * see it (a tool that declares a `return_mode` argument gets that argument
 * unchanged). Every upstream applies the mode in the pipeline
 * (src/mcp/pipeline/return-mode.ts); a passthrough upstream's results are
 * left as they came unless the caller asked for a mode, since passthrough
 * promises the upstream's own answer: a caller who asks gets the binary
 * replaced all the same.
 */
import { withoutReturnMode } from '../../mcp/pipeline/return-mode.ts';
import type { CallToolParams } from '../relay/relay.ts';

/** The call as it is forwarded, and the `_meta.return_mode` the caller gave (undefined: none). */
export function splitReturnMode(params: CallToolParams): { forwarded: CallToolParams; asked: unknown } {
  const meta = params._meta;
  if (!meta || !Object.hasOwn(meta, 'return_mode')) return { forwarded: params, asked: undefined };
  // `_meta` set even when nothing is left of it: the relay lays the call over the request it came in.
  return { forwarded: { ...params, _meta: withoutReturnMode(meta) }, asked: meta.return_mode };
}
