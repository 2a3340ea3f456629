import { describe, expect, it } from 'vitest';
import { wrapLegacy } from '../../../src/envelope/index.ts';
import { CONTRACT_METHODS } from '../../../src/provenance/contracts.ts';
import {
  attachRecord,
  checkContracts,
  checkMethodId,
  checkMethodIds,
  generateSigningKeyPair,
  LineageGraph,
  loadPrivateKey,
  loadPublicKey,
  METHOD_CATALOG,
  METHODS,
  type ProvRecord,
  RecordBuilder,
  signRecord,
} from '../../../src/provenance/index.ts';

describe('method catalog checks', () => {
  it('accepts every catalog method without findings of level error', () => {
    for (const { id } of METHOD_CATALOG.methods) {
      expect(checkMethodId(id).filter((finding) => finding.level === 'error')).toEqual([]);
    }
  });

  it.each(['Adapter.wrap', '1adapter.x', 'adapter-wrap', 'adapter..x', 'adapter.', '', 'adapter.wrap.V1'])(
    'rejects the syntax of %j',
    (id) => {
      expect(checkMethodId(id)).toEqual([
        expect.objectContaining({ level: 'error', code: 'METHOD_ID_INVALID' }),
      ]);
    },
  );

  it.each(['policy.retention.apply', 'attestation.x', 'execution.resources', 'audit.trail'])(
    'rejects the reserved namespace of %s',
    (id) => {
      expect(checkMethodId(id)).toEqual([
        expect.objectContaining({ level: 'error', code: 'METHOD_NAMESPACE_RESERVED' }),
      ]);
    },
  );

  it('warns about unknown namespaces and methods outside the catalog, and fails them when strict', () => {
    const codes = checkMethodId('vendor.custom.step').map((finding) => [finding.level, finding.code]);
    expect(codes).toEqual([
      ['warning', 'METHOD_NAMESPACE_UNKNOWN'],
      ['warning', 'METHOD_NOT_IN_CATALOG'],
    ]);
    expect(checkMethodId('engine.custom.step', { strict: true })).toEqual([
      expect.objectContaining({ level: 'error', code: 'METHOD_NOT_IN_CATALOG' }),
    ]);
  });

  it('warns about a method claimed twice', () => {
    const findings = checkMethodIds([METHODS.build, METHODS.build]);
    expect(findings.map((finding) => finding.code)).toContain('METHOD_DUPLICATE');
  });

  it('has a contract check for every catalog method', () => {
    expect([...CONTRACT_METHODS].sort()).toEqual(METHOD_CATALOG.methods.map((method) => method.id).sort());
  });
});

const RUN = '11111111-1111-4111-8111-111111111111';
const PARENT = '22222222-2222-4222-8222-222222222222';

function fullRecord(result: unknown): ProvRecord {
  return new RecordBuilder({ runId: RUN, tool: { name: 't', version: '1', adapter: 'cli' } })
    .claim(METHODS.wrap)
    .claim(METHODS.attachRecord)
    .claim(METHODS.errorsCapture)
    .claim(METHODS.warningsCapture)
    .input({ id: 'args', mediaType: 'application/json', content: { json: { q: 1 } }, digest: 'sha512' })
    .input({ id: 'src.txt', mediaType: 'text/plain', content: { text: 'a\nb\n' }, digest: 'blake3' })
    .output({
      id: 'result',
      mediaType: 'application/json',
      content: { json: result },
      digest: 'sha256',
      labels: { role: 'result' },
    })
    .evidence('q', 'artifact:args#json:/q')
    .coerceEvidence([{ field: 'line', source: 'artifact:src.txt#text:line:2' }])
    .parent(PARENT)
    .claim(METHODS.graphBuild)
    .build();
}

/** A fully claimed envelope whose every contract holds. */
function goodContext() {
  const pair = generateSigningKeyPair();
  const result = { answer: 42 };
  const signed = signRecord(
    { ...fullRecord(result), methods: [...fullRecord(result).methods, METHODS.signatureVerify] },
    loadPrivateKey(pair.privateKeyPem),
  );
  const envelope = attachRecord(
    wrapLegacy(result, { warnings: [{ code: 'W', message: 'w' }] }),
    signed,
  ) as unknown as Record<string, unknown>;
  envelope.errors = [{ code: 'E', message: 'e' }];
  const parent = new RecordBuilder({ runId: PARENT, tool: { name: 't', version: '1' } }).build();
  return {
    record: signed,
    envelope,
    lineage: new LineageGraph([signed, parent]),
    publicKey: loadPublicKey(pair.publicKeyPem),
  };
}

describe('contracts of every method', () => {
  it('a record that does everything it claims passes every contract', () => {
    const context = goodContext();
    const findings = checkContracts(context);
    expect(findings.filter((finding) => finding.status === 'fail')).toEqual([]);
    const claimed = new Set(findings.map((finding) => finding.method));
    // Every method but pass-through, which excludes wrap.
    expect([...claimed].sort()).toEqual(CONTRACT_METHODS.filter((id) => id !== METHODS.passThrough).sort());
  });

  type Context = ReturnType<typeof goodContext>;
  const breakers: Record<string, (context: Context) => void> = {
    [METHODS.wrap]: (c) => {
      c.envelope.result = { answer: 43 };
    },
    [METHODS.passThrough]: (c) => {
      c.record.methods.push(METHODS.passThrough);
      c.envelope.extra = 1;
    },
    [METHODS.attachRecord]: (c) => {
      c.envelope.provenance = { schema_version: 'prov.record.v0.1' };
    },
    [METHODS.errorsCapture]: (c) => {
      delete c.envelope.errors;
    },
    [METHODS.warningsCapture]: (c) => {
      c.envelope.warnings = [];
    },
    [METHODS.build]: (c) => {
      (c.record as unknown as Record<string, unknown>).run_id = 7;
    },
    [METHODS.registerInput]: (c) => {
      c.record.inputs = [];
    },
    [METHODS.registerOutput]: (c) => {
      c.record.outputs = [];
    },
    [METHODS.evidenceJsonPointer]: (c) => {
      c.record.evidence = c.record.evidence.filter((entry) => !entry.source.includes('#json:'));
    },
    [METHODS.evidenceTextLines]: (c) => {
      c.record.evidence = c.record.evidence.filter((entry) => !entry.source.includes('#text:'));
    },
    [METHODS.coerceEvidence]: (c) => {
      c.record.evidence = [];
    },
    'integrity.digest.sha256': (c) => {
      for (const artifact of c.record.outputs) if (artifact.digest) artifact.digest.value = 'ABC';
    },
    'integrity.digest.sha512': (c) => {
      for (const artifact of c.record.inputs) if (artifact.digest?.alg === 'sha512') delete artifact.digest;
    },
    'integrity.digest.blake3': (c) => {
      for (const artifact of c.record.inputs)
        if (artifact.digest?.alg === 'blake3') artifact.digest.value = artifact.digest.value.slice(1);
    },
    [METHODS.recordDigest]: (c) => {
      c.record.tool.version = '2';
    },
    [METHODS.signatureCreate]: (c) => {
      c.publicKey = loadPublicKey(generateSigningKeyPair().publicKeyPem);
    },
    [METHODS.signatureVerify]: (c) => {
      delete c.record.integrity;
    },
    [METHODS.parentLink]: (c) => {
      c.record.parents.push(c.record.run_id);
    },
    [METHODS.graphBuild]: (c) => {
      const parent = c.lineage.get(PARENT) as ProvRecord;
      c.lineage.add({ ...parent, parents: [RUN] });
    },
  };

  it('has a breaking case for every method', () => {
    expect(Object.keys(breakers).sort()).toEqual([...CONTRACT_METHODS].sort());
  });

  for (const [method, breakIt] of Object.entries(breakers)) {
    it(`reports a record claiming ${method} whose contract fails`, () => {
      const context = goodContext();
      context.record = structuredClone(context.record);
      context.envelope = { ...context.envelope, provenance: context.record };
      breakIt(context);
      const failed = checkContracts(context).filter((finding) => finding.status === 'fail');
      expect(failed.map((finding) => finding.method)).toContain(method);
    });
  }
});
