import { open, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { decodeUtf8, parseJsonBytes, parseJsonLossless } from '../canonical/json-text.ts';
import type { JsonValue } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';
import type { CliIo } from './output.ts';

/**
 * The largest input read into memory: 256 MiB. V8 strings top out near 512 MiB
 * (2^29 - 24 UTF-16 units), and a JSON document must become one string to be
 * parsed, then another, longer (escaped, wrapped), to be written: a 506 MB
 * input got that far and failed there, as a bare INTERNAL_ERROR.
 */
export const MAX_INPUT_BYTES = 256 * 1024 * 1024;

function tooLarge(name: string, size?: number): EnvelopeError {
  return new EnvelopeError(
    'INPUT_TOO_LARGE',
    `${name} is larger than the input limit of 256 MiB (${MAX_INPUT_BYTES} bytes)`,
    size === undefined ? { limit: MAX_INPUT_BYTES } : { limit: MAX_INPUT_BYTES, size },
  );
}

/** `-` (or nothing) means standard input. */
export function isStdin(path: string | undefined): boolean {
  return path === undefined || path === '-';
}

export function displayName(path: string | undefined): string {
  return isStdin(path) ? '<stdin>' : (path as string);
}

/** Standard input as chunks, whether it is a stream or its whole content. */
export async function* stdinChunks(stdin: CliIo['stdin']): AsyncIterable<Uint8Array | string> {
  if (typeof stdin === 'string' || stdin instanceof Uint8Array) yield Buffer.from(stdin);
  else yield* stdin as AsyncIterable<Uint8Array | string>;
}

async function readStream(stream: CliIo['stdin'], name: string): Promise<Buffer> {
  if (typeof stream === 'string' || stream instanceof Uint8Array) {
    const buffer = Buffer.from(stream);
    if (buffer.byteLength > MAX_INPUT_BYTES) throw tooLarge(name, buffer.byteLength);
    return buffer;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.byteLength;
    if (size > MAX_INPUT_BYTES) throw tooLarge(name);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size);
}

/** Reads a whole file (or stdin) with clear errors for missing, unreadable or oversized input. */
export async function readInputBytes(path: string | undefined, io: CliIo): Promise<Buffer> {
  if (isStdin(path)) return readStream(io.stdin, '<stdin>');
  const full = resolve(io.cwd, path as string);
  try {
    const info = await stat(full);
    if (info.isDirectory()) throw new EnvelopeError('INPUT_UNREADABLE', `${path} is a directory, not a file`);
    if (info.isFile() && info.size > MAX_INPUT_BYTES) throw tooLarge(path as string, info.size);
    const handle = await open(full, 'r');
    try {
      return await readStream(handle.createReadStream(), path as string);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof EnvelopeError) throw error;
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new EnvelopeError('INPUT_UNREADABLE', `Cannot read ${path}: ${reason}`, { path }, { cause: error });
  }
}

/** Reads and strictly parses a JSON document; errors name the input. */
export async function readJsonInput(path: string | undefined, io: CliIo): Promise<JsonValue> {
  const bytes = await readInputBytes(path, io);
  try {
    return parseJsonBytes(bytes);
  } catch (error) {
    if (error instanceof EnvelopeError) {
      throw new EnvelopeError(error.code, `${displayName(path)}: ${error.message}`, error.details, {
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * Reads a JSON document with its numbers as written (parseJsonLossless's twin):
 * for what is checked against digests and signatures, which bind the digits an
 * integer beyond 2^53 was written with.
 */
export async function readJsonInputExact(path: string | undefined, io: CliIo): Promise<JsonValue> {
  const bytes = await readInputBytes(path, io);
  try {
    return parseJsonLossless(decodeUtf8(bytes)).lossless as JsonValue;
  } catch (error) {
    if (error instanceof EnvelopeError) {
      throw new EnvelopeError(error.code, `${displayName(path)}: ${error.message}`, error.details, {
        cause: error,
      });
    }
    throw error;
  }
}

/** A tool result as read: see readResultInput. */
export interface ResultInput {
  /** The JSON value (plain numbers), or the text when it is not JSON or read as text. */
  value: unknown;
  /** Whether `value` was parsed from JSON. */
  json: boolean;
  /** The text as read (without a byte order mark). */
  text: string;
  /** For JSON, `value` with its numbers as written (parseJsonLossless); else `value`. */
  lossless: unknown;
}

/**
 * A tool result as read from a file: its JSON value, or (for bytes that are not
 * JSON, or with `asText`) the text itself, which is a legacy text payload.
 */
export async function readResultInput(
  path: string | undefined,
  io: CliIo,
  options: { asText?: boolean } = {},
): Promise<ResultInput> {
  const bytes = await readInputBytes(path, io);
  let text: string;
  try {
    text = decodeUtf8(bytes);
  } catch (error) {
    if (error instanceof EnvelopeError) {
      throw new EnvelopeError(error.code, `${displayName(path)}: ${error.message}`, error.details);
    }
    throw error;
  }
  if (options.asText) return { value: text, json: false, text, lossless: text };
  try {
    const { value, lossless } = parseJsonLossless(text);
    return { value, json: true, text, lossless };
  } catch (error) {
    if (error instanceof EnvelopeError) return { value: text, json: false, text, lossless: text };
    throw error;
  }
}
