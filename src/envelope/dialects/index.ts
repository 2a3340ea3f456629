import { EnvelopeError } from '../../errors/index.ts';
import { DIALECT_IDS, type DialectCodec, type DialectId } from '../dialect.ts';
import { a11yV01Codec } from './a11y-v01.ts';
import { hostedV2Codec } from './hosted-v2.ts';
import { jsonrpcRequestCodec } from './jsonrpc-request.ts';
import { legacyCodec, registerEnvelopeClaims } from './legacy.ts';
import { provV01Codec } from './prov-v01.ts';
import { scalpelV1Codec } from './scalpel-v1.ts';

/** Every dialect codec, keyed by dialect id. `legacy` is the one that claims what no other does. */
export const CODECS: Readonly<Record<DialectId, DialectCodec>> = Object.freeze({
  'prov-v0.1': provV01Codec,
  'scalpel-v1': scalpelV1Codec,
  'hosted-v2': hostedV2Codec,
  'a11y-v0.1': a11yV01Codec,
  'jsonrpc-request': jsonrpcRequestCodec,
  legacy: legacyCodec,
});

/** The envelope dialects, in detection order (legacy last: it is what none of them claims). */
export const ENVELOPE_CODECS: readonly DialectCodec[] = DIALECT_IDS.filter((id) => id !== 'legacy').map(
  (id) => CODECS[id],
);

registerEnvelopeClaims(ENVELOPE_CODECS.map((codec) => ({ dialect: codec.id, claims: codec.claims })));

export function isDialectId(value: unknown): value is DialectId {
  return typeof value === 'string' && (DIALECT_IDS as readonly string[]).includes(value);
}

export function codecFor(id: DialectId): DialectCodec {
  const codec = isDialectId(id) ? CODECS[id] : undefined;
  if (!codec) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `Unknown dialect "${String(id)}" (expected ${DIALECT_IDS.join(', ')})`,
      {
        dialect: id,
      },
    );
  }
  return codec;
}
