import type { ReturnMode } from '../../artifacts/service.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import { EnvelopeError, isEnvelopeError } from '../../errors/index.ts';
import { METHODS, type ProvRecord } from '../../provenance/index.ts';
import { attachRecordDigest } from '../../provenance/integrity.ts';
import { type Artifact, digestMethod } from '../../provenance/record.ts';
import type { ToolResultLike } from '../tool-result.ts';
import type { CallContext } from './context.ts';
import { type Decision, invalidInput, rejection } from './decision.ts';
import { entry } from './entries.ts';
import type { ToolOutput } from './read-output.ts';
import type { ArtifactSink, StoredArtifact } from './types.ts';

/**
 * Return modes: how a produced file reaches the caller (Hosted MCP v2's
 * `url`, `base64_docx`, `mcp_resource`, offered for any tool). When a result
 * carries a binary (an `image` or `audio` block, an embedded resource with a
 * `blob`) or is larger than the sink's `inlineMaxBytes`, the caller's
 * `return_mode` decides (a caller that asks for none keeps its binaries
 * inline; only a result over `inlineMaxBytes` is then stored, in the sink's
 * default mode):
 *
 * - `url`: the bytes are stored and the block is replaced by a descriptor
 *   `{download_url, download_id, expires_at, content_type, size_bytes, sha256, filename}`;
 * - `base64` (alias `base64_docx`): the result stays as the tool gave it;
 * - `mcp_resource`: as `url`, with a `resource_uri` the gateway's resources/read answers.
 *
 * On the wire each replaced block becomes, in its place, a text block holding
 * the descriptor's JSON (so a result that was one binary has the descriptor as
 * its payload, and an envelope's data is the descriptor), and a `resource_link`
 * block for it follows the rest of the answer. Each stored artifact is an
 * output artifact of the call's provenance record (its sha256 and size), so a
 * downloaded file can be verified against the record.
 */

export type { ReturnMode };

/** Spellings a caller may use: Hosted MCP v2 says `base64_docx`. */
const SPELLINGS: Readonly<Record<string, ReturnMode>> = {
  url: 'url',
  base64: 'base64',
  base64_docx: 'base64',
  mcp_resource: 'mcp_resource',
};

/** A `resource_link` content block (MCP 2025-06-18). */
export interface ResourceLinkBlock {
  type: 'resource_link';
  uri: string;
  name: string;
  mimeType: string;
  size: number;
}

/** What the stage did to one result. */
export interface ReturnModeOutcome {
  result: ToolResultLike;
  /** One output artifact per stored block, for the record. */
  artifacts: Artifact[];
  /** To send after the answer's other blocks. */
  links: ResourceLinkBlock[];
}

/** `value` as a return mode; INVALID_INPUT at `pointer` when it is none. */
export function parseReturnMode(value: unknown, pointer: string): ReturnMode {
  const mode = typeof value === 'string' ? SPELLINGS[value] : undefined;
  if (mode === undefined) {
    throw new EnvelopeError(
      'INVALID_INPUT',
      `${pointer} must be one of url, base64, base64_docx, mcp_resource, got ${JSON.stringify(value)}`,
      { pointer },
    );
  }
  return mode;
}

/** Whether the tool's inputSchema declares a `return_mode` argument (the tool then receives it too). */
export function declaresReturnMode(inputSchema: Record<string, unknown> | undefined): boolean {
  const properties = inputSchema?.properties;
  return isJsonObject(properties) && Object.hasOwn(properties, 'return_mode');
}

/**
 * The mode the caller asked for, undefined when it asked for none: the tool's
 * own `return_mode` argument when it declares one (a value of the tool's own
 * that is no mode here asks for none), else `_meta.return_mode` (a bad value
 * is INVALID_INPUT).
 */
export function requestedReturnMode(
  inputSchema: Record<string, unknown> | undefined,
  args: Record<string, unknown> | undefined,
  metaValue: unknown,
): ReturnMode | undefined {
  if (declaresReturnMode(inputSchema) && args?.return_mode !== undefined) {
    const mode = typeof args.return_mode === 'string' ? SPELLINGS[args.return_mode] : undefined;
    if (mode !== undefined) return mode;
  }
  return metaValue === undefined ? undefined : parseReturnMode(metaValue, '/_meta/return_mode');
}

/** `_meta` without `return_mode`, which is the gateway's and never reaches an upstream. */
export function withoutReturnMode(
  meta: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!meta || !Object.hasOwn(meta, 'return_mode')) return meta;
  const { return_mode: _mode, ...rest } = meta;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
  'image/svg+xml': '.svg',
  'audio/wav': '.wav',
  'audio/x-wav': '.wav',
  'audio/mpeg': '.mp3',
  'audio/ogg': '.ogg',
  'application/pdf': '.pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': '.docx',
  'application/json': '.json',
  'text/plain': '.txt',
  'text/markdown': '.md',
  'text/html': '.html',
  'text/csv': '.csv',
};

/** A name `verify --artifacts` finds as a plain file name, and a download offers: letters, digits, `._-`. */
function safeName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9_]+/, '');
  return cleaned.slice(0, 120) || 'artifact';
}

/** A member of a block that holds its bytes: base64 (`binary`) or text. */
interface Offloadable {
  index: number;
  kind: 'binary' | 'text';
  /** The base64 or the text. */
  payload: string;
  mediaType: string;
  /** The embedded resource's URI, which may name the file. */
  uri: string | undefined;
}

function offloadable(block: unknown, index: number): Offloadable | undefined {
  if (!isJsonObject(block)) return undefined;
  if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
    const mediaType = typeof block.mimeType === 'string' ? block.mimeType : 'application/octet-stream';
    return { index, kind: 'binary', payload: block.data, mediaType, uri: undefined };
  }
  if (block.type === 'resource' && isJsonObject(block.resource)) {
    const { resource } = block;
    const uri = typeof resource.uri === 'string' ? resource.uri : undefined;
    const stated = typeof resource.mimeType === 'string' ? resource.mimeType : undefined;
    if (typeof resource.blob === 'string')
      return {
        index,
        kind: 'binary',
        payload: resource.blob,
        mediaType: stated ?? 'application/octet-stream',
        uri,
      };
    if (typeof resource.text === 'string')
      return { index, kind: 'text', payload: resource.text, mediaType: stated ?? 'text/plain', uri };
  }
  if (block.type === 'text' && typeof block.text === 'string')
    return { index, kind: 'text', payload: block.text, mediaType: 'text/plain', uri: undefined };
  return undefined;
}

/** Bytes a member holds once decoded (base64: three bytes per four characters, less padding). */
function decodedSize(member: Offloadable): number {
  if (member.kind === 'text') return Buffer.byteLength(member.payload, 'utf8');
  const { payload } = member;
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((payload.length * 3) / 4) - padding);
}

/**
 * What the result's content weighs inline: its members' text and base64.
 * `structuredContent` is left out: it is never moved (the output schema is
 * checked on it), and serializing it on every call to weigh it would cost
 * more than the rest of this stage.
 */
function inlineSize(members: readonly Offloadable[]): number {
  let size = 0;
  for (const member of members) size += member.payload.length;
  return size;
}

/**
 * The members to store. Asked for a mode: every binary, then texts, largest
 * first, until the rest fits inline. Not asked: nothing while the result fits
 * inline (a client that never heard of return modes keeps getting its images),
 * else the largest members, binary or text, until the rest fits.
 */
function chosen(members: readonly Offloadable[], inlineMaxBytes: number, asked: boolean): Offloadable[] {
  if (!asked) {
    let size = inlineSize(members);
    if (size <= inlineMaxBytes) return [];
    const picked: Offloadable[] = [];
    for (const member of [...members].sort((a, b) => b.payload.length - a.payload.length)) {
      if (size <= inlineMaxBytes) break;
      picked.push(member);
      size -= member.payload.length;
    }
    return picked.sort((a, b) => a.index - b.index);
  }
  const binaries = members.filter((member) => member.kind === 'binary');
  let size = inlineSize(members) - binaries.reduce((sum, member) => sum + member.payload.length, 0);
  const picked = [...binaries];
  const texts = members
    .filter((member) => member.kind === 'text')
    .sort((a, b) => b.payload.length - a.payload.length);
  for (const text of texts) {
    if (size <= inlineMaxBytes) break;
    picked.push(text);
    size -= text.payload.length;
  }
  return picked.sort((a, b) => a.index - b.index);
}

function filenameFor(member: Offloadable, tool: string, taken: Set<string>): string {
  const fromUri = member.uri?.split(/[/\\]/).pop()?.split(/[?#]/)[0];
  const extension = EXTENSIONS[member.mediaType.split(';')[0]?.trim().toLowerCase() ?? ''] ?? '.bin';
  let base =
    fromUri && /\.[A-Za-z0-9]+$/.test(fromUri)
      ? safeName(fromUri)
      : safeName(`${tool}-${member.index}${extension}`);
  // Unique within the record, and never one of the record's own artifact ids.
  let counter = 2;
  const original = base;
  while (taken.has(base) || base === 'result' || base === 'arguments') {
    const dot = original.lastIndexOf('.');
    base = dot > 0 ? `${original.slice(0, dot)}-${counter}${original.slice(dot)}` : `${original}-${counter}`;
    counter += 1;
  }
  taken.add(base);
  return base;
}

/** The descriptor a replaced block becomes: what Hosted MCP v2 returns for its modes. */
function descriptor(stored: StoredArtifact, mode: 'url' | 'mcp_resource', requested: ReturnMode) {
  const common = {
    download_id: stored.downloadId,
    expires_at: stored.expiresAt,
    content_type: stored.mediaType,
    size_bytes: stored.sizeBytes,
    sha256: stored.digest,
    filename: stored.filename,
  };
  if (mode === 'url') return { return_mode: 'url', download_url: stored.downloadUrl, ...common };
  return {
    return_mode: 'mcp_resource',
    resource_uri: stored.resourceUri,
    ...(stored.downloadUrl === undefined ? {} : { download_url: stored.downloadUrl }),
    ...common,
    ...(requested === 'url'
      ? {
          note: 'No download URL: the gateway has no HTTP listener and no artifacts.publicUrl; read resource_uri instead',
        }
      : {}),
  };
}

/** The record's output artifact for a stored artifact. */
export function outputArtifact(stored: StoredArtifact, source: string): Artifact {
  return {
    schema_version: 'artifact.v0.1',
    artifact_id: stored.filename,
    media_type: stored.mediaType,
    size_bytes: stored.sizeBytes,
    digest: { alg: 'sha256', value: stored.digest },
    labels: { role: 'artifact', source },
  };
}

/**
 * Applies a return mode to a result: the blocks to store are stored (owned by
 * `owner`) and replaced as the module comment says. `base64`, and a result
 * with nothing to store, come back unchanged. An artifact over the sink's
 * `maxBytes` is TOO_LARGE, checked before its base64 is decoded.
 */
export async function applyReturnMode(
  raw: ToolResultLike,
  options: {
    sink: ArtifactSink;
    /** The caller's mode; undefined when it asked for none (then only an oversized result is stored, in the sink's default mode). */
    requested: ReturnMode | undefined;
    owner: string;
    tool: string;
  },
): Promise<ReturnModeOutcome> {
  const { sink, requested } = options;
  const mode = requested ?? sink.defaultReturnMode;
  const unchanged = { result: raw, artifacts: [], links: [] };
  if (mode === 'base64' || !Array.isArray(raw.content)) return unchanged;
  const members = raw.content.flatMap((block, index) => offloadable(block, index) ?? []);
  const picked = chosen(members, sink.inlineMaxBytes, requested !== undefined);
  if (picked.length === 0) return unchanged;
  const content = [...raw.content];
  const artifacts: Artifact[] = [];
  const links: ResourceLinkBlock[] = [];
  const taken = new Set<string>();
  for (const member of picked) {
    const size = decodedSize(member);
    if (sink.maxBytes !== undefined && size > sink.maxBytes)
      throw tooLarge(member.index, size, sink.maxBytes);
    const bytes =
      member.kind === 'binary' ? Buffer.from(member.payload, 'base64') : Buffer.from(member.payload, 'utf8');
    const filename = filenameFor(member, options.tool, taken);
    let stored: StoredArtifact;
    try {
      stored = await sink.store(bytes, { mediaType: member.mediaType, filename, owner: options.owner });
    } catch (error) {
      if (isEnvelopeError(error) && error.code === 'INPUT_TOO_LARGE')
        throw tooLarge(member.index, bytes.length, sink.maxBytes);
      throw error;
    }
    // Without a download URL the caller can still read it as a resource.
    const served = mode === 'url' && stored.downloadUrl !== undefined ? 'url' : 'mcp_resource';
    content[member.index] = { type: 'text', text: JSON.stringify(descriptor(stored, served, mode)) };
    const uri = served === 'url' ? (stored.downloadUrl as string) : stored.resourceUri;
    links.push({
      type: 'resource_link',
      uri,
      name: stored.filename,
      mimeType: stored.mediaType,
      size: stored.sizeBytes,
    });
    artifacts.push(outputArtifact(stored, `/content/${member.index}`));
  }
  return { result: { ...raw, content }, artifacts, links };
}

function tooLarge(index: number, size: number, maxBytes: number | undefined): EnvelopeError {
  return new EnvelopeError(
    'TOO_LARGE',
    `The result's block ${index} holds ${size} bytes, more than the ${maxBytes} an artifact may hold`,
    {
      pointer: `/content/${index}`,
      size_bytes: size,
      ...(maxBytes === undefined ? {} : { max_bytes: maxBytes }),
    },
  );
}

/**
 * Before the tool runs: the caller's return mode, read once into the context
 * (from `ToolCall.returnMode` when the caller's `_meta` no longer carries it);
 * a bad `_meta.return_mode` refuses the call as invalid input.
 */
export function readReturnMode(ctx: CallContext): Decision | undefined {
  const sink = ctx.settings.options.artifacts;
  if (!sink) return undefined;
  const { call } = ctx;
  const meta = isJsonObject(call.meta) ? call.meta : undefined;
  try {
    ctx.returnMode = requestedReturnMode(
      call.tool.inputSchema,
      call.arguments,
      call.returnMode ?? meta?.return_mode,
    );
  } catch (error) {
    if (!isEnvelopeError(error) || error.code !== 'INVALID_INPUT') throw error;
    return invalidInput(ctx, error.message, '/_meta/return_mode');
  }
  return undefined;
}

/** The caller's return mode applied to what the tool returned; whoever called owns what their call stored. */
function applyCallersMode(
  ctx: CallContext,
  sink: ArtifactSink,
  raw: ToolResultLike,
): Promise<ReturnModeOutcome> {
  return applyReturnMode(raw, {
    sink,
    requested: ctx.returnMode,
    owner: ctx.call.principal ?? 'anonymous',
    tool: ctx.call.tool.name,
  });
}

/**
 * Stage 2b: the caller's return mode applied to what the tool returned. The
 * stored artifacts join the call's context (the record registers them, the
 * links follow the answer); a block over `maxBytes` is the call's TOO_LARGE
 * error; a store that fails leaves the result inline, with a warning.
 */
export async function returnModeStage(
  ctx: CallContext,
  raw: ToolResultLike,
): Promise<{ result: ToolResultLike } | { decision: Decision }> {
  const sink = ctx.settings.options.artifacts;
  if (!sink) return { result: raw };
  try {
    const outcome = await applyCallersMode(ctx, sink, raw);
    ctx.outputArtifacts.push(...outcome.artifacts);
    ctx.trailingBlocks.push(...outcome.links);
    return { result: outcome.result };
  } catch (error) {
    if (isEnvelopeError(error) && error.code === 'TOO_LARGE') {
      const details = Object.fromEntries(
        Object.entries(error.details ?? {}).filter(([, value]) =>
          ['string', 'number'].includes(typeof value),
        ),
      ) as Record<string, string | number>;
      return { decision: rejection(ctx, 'execution_failed', entry('TOO_LARGE', error.message, details)) };
    }
    const reason = error instanceof Error ? error.message : String(error);
    ctx.warnings.push(
      entry(
        'DEPENDENCY_UNAVAILABLE',
        `The artifact store could not keep the result's files; they are inline: ${reason}`,
      ),
    );
    return { result: raw };
  }
}

/**
 * An envelope whose data names a `download_id` this pipeline's sink can
 * resolve (a server writing into the same store): the artifact it grants is
 * registered as an output of the call's record too.
 */
export async function noteEnvelopeDownload(ctx: CallContext, output: ToolOutput): Promise<void> {
  const sink = ctx.settings.options.artifacts;
  const detection = output.detection;
  if (!sink || !ctx.controls.captureProvenance || !detection?.match) return;
  const data = detection.model.data;
  if (!isJsonObject(data) || typeof data.download_id !== 'string') return;
  const stored = await sink.resolve(data.download_id).catch(() => undefined);
  if (!stored || ctx.outputArtifacts.some((artifact) => artifact.digest?.value === stored.digest)) return;
  const taken = new Set(ctx.outputArtifacts.map((artifact) => artifact.artifact_id));
  const id = taken.has(stored.filename)
    ? `${stored.downloadId.slice(0, 12)}-${stored.filename}`
    : stored.filename;
  ctx.outputArtifacts.push(outputArtifact({ ...stored, filename: safeName(id) }, '/data/download_id'));
}

/** A record with the call's stored artifacts among its outputs (its digest recomputed when it has one). */
export function withOutputArtifacts(record: ProvRecord, artifacts: readonly Artifact[]): ProvRecord {
  if (artifacts.length === 0) return record;
  const methods = [...record.methods];
  for (const method of [METHODS.registerOutput, digestMethod('sha256')])
    if (!methods.includes(method)) methods.push(method);
  const extended: ProvRecord = { ...record, outputs: [...record.outputs, ...artifacts], methods };
  return record.integrity ? attachRecordDigest(extended) : extended;
}

/**
 * The return mode a passthrough call asked for, applied to the result it
 * relays as it came: files stored and replaced, their links after the other
 * blocks. Only when the caller asked (a relayed result is otherwise never
 * touched); an artifact over the store's limit is TOO_LARGE (thrown: there is
 * no envelope to say it in); a store that fails leaves the result as it came.
 */
export async function relayedReturnMode(ctx: CallContext, raw: ToolResultLike): Promise<ToolResultLike> {
  const sink = ctx.settings.options.artifacts;
  if (!sink || ctx.returnMode === undefined) return raw;
  try {
    const outcome = await applyCallersMode(ctx, sink, raw);
    if (outcome.artifacts.length === 0) return raw;
    const replaced = outcome.result;
    const content = Array.isArray(replaced.content) ? replaced.content : [];
    return { ...replaced, content: [...content, ...outcome.links] };
  } catch (error) {
    if (isEnvelopeError(error) && error.code === 'TOO_LARGE') throw error;
    ctx.settings.options.onStoreError?.(error);
    return raw;
  }
}
