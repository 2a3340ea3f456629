import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpGateway, startHttpGateway } from '../../src/gateway/http/server.ts';
import { readLatestCallLogs } from '../../src/gateway/operations/call-log.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import {
  callLeg,
  httpTarget,
  type InputRequired,
  SAMPLED,
  statelessEraClient,
  stdioTarget,
  type Target,
  textOf,
} from './era-2026-07-28.ts';
import { deferred, within } from './events.ts';
import { FIXTURE, NODE } from './processes.ts';

/**
 * Server-to-client requests for 2026-07-28 clients: the gateway parks the
 * upstream call and answers input_required; the client's retry resumes it.
 */

const NAME = { action: 'accept' as const, content: { name: 'Ada' } };

const ANY_RESULT = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

const open: Client[] = [];
async function connected(target: Target, client: Client, token?: string) {
  open.push(client);
  return target.connect(client, token);
}

async function closeAll(): Promise<void> {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => {})));
}

function errorOf(error: unknown): { code?: number; message?: string; data?: { canonical_code?: string } } {
  return error as { code?: number; message?: string; data?: { canonical_code?: string } };
}

/**
 * Resolves once a call started now has timed out upstream. Where it is used
 * every call has the same timeout, so its timer, set last, fires after those of
 * the calls parked before it: by then they were given up and cancelled
 * upstream, their cancellations ahead of this call's own.
 */
async function outlastTimeout(client: Client): Promise<void> {
  const late = await client.callTool({ name: 'slow', arguments: { ms: 30_000 } }).catch(errorOf);
  expect(late).toMatchObject({ data: { canonical_code: 'TIMEOUT' } });
}

describe.each([httpTarget(), stdioTarget()])('2026-07-28 input rounds over $name', (target) => {
  beforeAll(() => target.start());
  afterAll(async () => {
    await closeAll();
    await target.stop();
  });

  it('relays sampling, form and URL elicitation and roots as input_required rounds', async () => {
    const client = statelessEraClient({ sampling: {}, elicitation: { form: {}, url: {} }, roots: {} });
    const asked: string[] = [];
    client.setRequestHandler('sampling/createMessage', async () => SAMPLED);
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(String(request.params.mode ?? 'form'));
      return request.params.mode === 'url'
        ? { action: 'accept' }
        : { action: 'accept', content: { username: 'ada', email: 'a@b' } };
    });
    client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
    await connected(target, client);
    expect(client.getProtocolEra()).toBe('modern');

    const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'p' } });
    expect(textOf(sampled)).toBe('LLM response: sampled');
    const form = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
    expect(textOf(form)).toBe('User response: action=accept, content={"username":"ada","email":"a@b"}');
    const url = await client.callTool({ name: 'ask_url', arguments: {} });
    expect(textOf(url)).toBe('url elicitation: accept');
    const roots = await client.callTool({ name: 'list_roots', arguments: {} });
    expect(JSON.parse(textOf(roots))).toMatchObject({ roots: [{ uri: 'file:///work', name: 'work' }] });
    expect(asked).toEqual(['form', 'url']);
  });

  it('passes a decline through as the answer the upstream gets', async () => {
    const client = statelessEraClient({ elicitation: {} });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'decline' }));
    await connected(target, client);
    const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
    expect(textOf(result)).toBe('User response: action=decline, content={}');
  });

  it('asks in a further round when the upstream asks again, and relays progress to each retry', async () => {
    const client = statelessEraClient({ elicitation: {} });
    const questions: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      questions.push(request.params.message);
      return request.params.message === 'Your name?'
        ? NAME
        : { action: 'accept', content: { color: 'teal' } };
    });
    // The SDK client settles a result at once but dispatches notifications a microtask later, so
    // its onprogress path can miss a notification read in the same chunk as the result. Collect
    // progress with a handler of our own; onprogress still makes every leg ask for progress.
    const steps: { token: unknown; message: string }[] = [];
    const asked = () => steps.filter((step) => !step.message.startsWith('Fulfilling'));
    const bothAsked = deferred();
    client.setNotificationHandler('notifications/progress', (notification) => {
      steps.push({ token: notification.params.progressToken, message: notification.params.message ?? '' });
      if (asked().length === 2) bothAsked.resolve();
    });
    const sent = await connected(target, client);
    const before = sent('tools/call');
    const result = await client.callTool({ name: 'ask_twice', arguments: {} }, { onprogress: () => {} });
    expect(textOf(result)).toBe('name={"name":"Ada"}, color={"color":"teal"}');
    expect(questions).toEqual(['Your name?', 'Your favourite color?']);
    // The first call and one retry per round.
    expect(sent('tools/call') - before).toBe(3);
    await within(bothAsked.promise, 5_000, 'progress for both rounds');
    expect(asked().map((step) => step.message)).toEqual(['asking for a name', 'asking for a color']);
    // Each round's progress goes to the leg that was waiting then, under that leg's own token.
    const [name, color] = asked();
    expect(name?.token).not.toEqual(color?.token);
  });

  it('sends requests the upstream makes together in one round', async () => {
    const client = statelessEraClient({ elicitation: {}, sampling: {} });
    client.setRequestHandler('elicitation/create', async () => NAME);
    client.setRequestHandler('sampling/createMessage', async () => SAMPLED);
    const sent = await connected(target, client);
    const before = sent('tools/call');
    const result = await client.callTool({ name: 'ask_together', arguments: {} });
    expect(textOf(result)).toBe('name={"name":"Ada"}, sampled=sampled');
    expect(sent('tools/call') - before).toBe(2);
  });

  it('lets at most 32 requests wait on one call; the upstream’s next one is refused at once', async () => {
    const client = statelessEraClient({ elicitation: {} });
    let asked = 0;
    client.setRequestHandler('elicitation/create', async () => {
      asked++;
      return NAME;
    });
    const sent = await connected(target, client);
    const before = sent('tools/call');
    const result = await client.callTool({ name: 'ask_many', arguments: { count: 33 } });
    const rounds = sent('tools/call') - before - 1;
    if (/refused=1/.test(textOf(result))) {
      // The 33rd found 32 waiting (all, or the last of them, in one round) and was refused.
      expect(textOf(result)).toMatch(/^answered=32, refused=1: .*At most 32 requests may wait on one call/);
      expect(asked).toBe(32);
    } else {
      // On a loaded machine they can arrive over several rounds, each answered before the
      // rest came: never 32 waiting at once, so none is refused.
      expect(textOf(result)).toBe('answered=33, refused=0');
      expect(asked).toBe(33);
      expect(rounds).toBeGreaterThan(1);
    }
  });

  it('refuses tampered, foreign, outdated and spent requestState with the SDK’s -32602', async () => {
    const client = statelessEraClient({ elicitation: {} });
    await connected(target, client);
    const call = { name: 'ask_twice', arguments: {} };
    const retry = (leg: InputRequired, answer: unknown, state = leg.requestState) =>
      callLeg(client, {
        ...call,
        inputResponses: Object.fromEntries(Object.keys(leg.inputRequests ?? {}).map((key) => [key, answer])),
        requestState: state,
      });
    const first = await callLeg(client, call);
    expect(first.resultType).toBe('input_required');
    expect(Object.values(first.inputRequests ?? {}).map((request) => request.method)).toEqual([
      'elicitation/create',
    ]);
    const state = first.requestState as string;

    const refused = { code: -32602, message: 'Invalid or expired requestState' };
    expect(await retry(first, NAME, `${state}x`).catch(errorOf)).toMatchObject(refused);
    const otherArguments = {
      name: 'ask_twice',
      arguments: { extra: 1 },
      inputResponses: {},
      requestState: state,
    };
    expect(await callLeg(client, otherArguments).catch(errorOf)).toMatchObject(refused);
    const otherTool = { name: 'echo', arguments: { text: 'x' }, inputResponses: {}, requestState: state };
    expect(await callLeg(client, otherTool).catch(errorOf)).toMatchObject(refused);

    const second = await retry(first, NAME);
    expect(Object.values(second.inputRequests ?? {}).map((request) => request.params?.message)).toEqual([
      'Your favourite color?',
    ]);
    expect(await retry(second, NAME, state).catch(errorOf)).toMatchObject(refused);
    const done = await retry(second, { action: 'accept', content: { color: 'red' } });
    expect(textOf(done)).toBe('name={"name":"Ada"}, color={"color":"red"}');
    expect(await retry(second, NAME).catch(errorOf)).toMatchObject(refused);
  });

  it('a client that lacks the capability is never asked: its upstream, told the truth, refuses on its own', async () => {
    const client = statelessEraClient({ sampling: {} });
    await connected(target, client);
    const before = Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })));
    const error = await client.callTool({ name: 'ask_twice', arguments: {} }).catch(errorOf);
    // The upstream serving this client was told what it declared (over stdio, by the client's first
    // message, before anything reached the relay): it refuses on its own, and nothing is cancelled.
    expect(error).toMatchObject({ message: expect.stringMatching(/elicitation/i) });
    expect(Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })))).toBe(before);
  });

  it('drops a request the upstream withdrew while the call was parked', async () => {
    const client = statelessEraClient({ sampling: {}, elicitation: {} });
    let withdrawn: () => void = () => {};
    const announced = new Promise<void>((resolve) => {
      withdrawn = resolve;
    });
    client.setNotificationHandler('notifications/tools/list_changed', async () => withdrawn());
    await connected(target, client);
    const listening = await client.listen({ toolsListChanged: true });
    try {
      const first = await callLeg(client, { name: 'change_mind', arguments: {} });
      expect(Object.values(first.inputRequests ?? {}).map((request) => request.method)).toEqual([
        'sampling/createMessage',
      ]);
      // The upstream gives up on sampling after 500 ms and says so with list_changed.
      await announced;
      const second = await callLeg(client, {
        name: 'change_mind',
        arguments: {},
        inputResponses: {},
        requestState: first.requestState,
      });
      const requests = Object.entries(second.inputRequests ?? {});
      expect(requests.map(([, request]) => request.method)).toEqual(['elicitation/create']);
      const done = await callLeg(client, {
        name: 'change_mind',
        arguments: {},
        inputResponses: { [requests[0]?.[0] as string]: NAME },
        requestState: second.requestState,
      });
      expect(textOf(done)).toBe('sampling withdrawn, name={"name":"Ada"}');
    } finally {
      await listening.close();
    }
  });

  // Last: the crash restarts this target's upstream.
  it('fails the retry with ADAPTER.EXECUTION.FAILED when the upstream crashed while the call was parked', async () => {
    const client = statelessEraClient({ sampling: {} });
    await connected(target, client);
    const call = { name: 'test_sampling', arguments: { prompt: 'p' } };
    const first = await callLeg(client, call);
    const [key] = Object.keys(first.inputRequests ?? {});
    await client.callTool({ name: 'crash', arguments: { code: 7 } }).catch(() => {});
    const retry = await callLeg(client, {
      ...call,
      inputResponses: { [key as string]: SAMPLED },
      requestState: first.requestState,
    }).catch(errorOf);
    expect(retry).toMatchObject({ data: { canonical_code: 'ADAPTER.EXECUTION.FAILED' } });
  });
});

describe.each([httpTarget(), stdioTarget()])('2025-era clients over $name', (target) => {
  beforeAll(() => target.start());
  afterAll(async () => {
    await closeAll();
    await target.stop();
  });

  it('still get server-to-client requests pushed, whatever requestState they send', async () => {
    const client = new Client({ name: 'legacy-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler('sampling/createMessage', async () => SAMPLED);
    await connected(target, client);
    expect(client.getProtocolEra()).toBe('legacy');
    const sent = { name: 'test_sampling', arguments: { prompt: 'p' }, requestState: 'not ours' };
    const result = await client.request({ method: 'tools/call', params: sent }, ANY_RESULT);
    expect(textOf(result as { content?: unknown })).toBe('LLM response: sampled');
  });
});

describe.each([httpTarget(['--timeout', '1500']), stdioTarget(['--timeout', '1500'])])(
  'a parked call that is never retried, over $name',
  (target) => {
    beforeAll(() => target.start());
    afterAll(async () => {
      await closeAll();
      await target.stop();
    });

    it('is cancelled upstream within its timeout, and its state is then spent', async () => {
      const client = statelessEraClient({ elicitation: {} });
      await connected(target, client);
      const before = Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })));
      const first = await callLeg(client, { name: 'ask_twice', arguments: {} });
      expect(first.resultType).toBe('input_required');
      await outlastTimeout(client);
      // The parked call's cancellation and the timed-out one's.
      expect(Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })))).toBe(
        before + 2,
      );
      const [key] = Object.keys(first.inputRequests ?? {});
      const retry = {
        name: 'ask_twice',
        arguments: {},
        inputResponses: { [key as string]: NAME },
        requestState: first.requestState,
      };
      // Dropped at its timeout, the call is gone: its state is spent.
      const spent = await callLeg(client, retry).catch(errorOf);
      expect(spent).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
    });
  },
);

describe('2026-07-28 input rounds over HTTP with bearer tokens', () => {
  const target = httpTarget(['--token', 'alpha-token-0123456789', '--token', 'beta-token-0123456789']);
  beforeAll(() => target.start());
  afterAll(async () => {
    await closeAll();
    await target.stop();
  });

  it('never sends one principal’s server-to-client request to another’s client', async () => {
    const alphaAsked: string[] = [];
    const betaAsked: string[] = [];
    const alpha = statelessEraClient({ elicitation: {} });
    alpha.setRequestHandler('elicitation/create', async (request) => {
      alphaAsked.push(request.params.message);
      return NAME;
    });
    const beta = statelessEraClient({ elicitation: {} });
    beta.setRequestHandler('elicitation/create', async (request) => {
      betaAsked.push(request.params.message);
      return NAME;
    });
    await connected(target, alpha, 'alpha-token-0123456789');
    await connected(target, beta, 'beta-token-0123456789');

    // alpha's call is in flight first, beta's after it; then alpha's upstream asks.
    let alphaStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      alphaStarted = resolve;
    });
    const alphaCall = alpha.callTool(
      { name: 'ask_when_released', arguments: {} },
      { onprogress: () => alphaStarted(), timeout: 30_000 },
    );
    await started;
    let betaStarted: () => void = () => {};
    const betaInFlight = new Promise<void>((resolve) => {
      betaStarted = resolve;
    });
    const betaCall = beta
      .callTool(
        { name: 'ask_when_released', arguments: {} },
        { onprogress: () => betaStarted(), timeout: 30_000 },
      )
      .catch(() => undefined);
    await betaInFlight;
    expect(textOf(await alpha.callTool({ name: 'release', arguments: {} }))).toBe('released');

    expect(textOf(await alphaCall)).toBe('name={"name":"Ada"}');
    expect(alphaAsked).toEqual(['Released: your name?']);
    expect(betaAsked).toEqual([]);
    await beta.close();
    await betaCall;
  });

  it('refuses one principal’s requestState when another presents it', async () => {
    const alpha = statelessEraClient({ sampling: {} });
    const beta = statelessEraClient({ sampling: {} });
    await connected(target, alpha, 'alpha-token-0123456789');
    await connected(target, beta, 'beta-token-0123456789');
    const call = { name: 'test_sampling', arguments: { prompt: 'p' } };
    const first = await callLeg(alpha, call);
    const [key] = Object.keys(first.inputRequests ?? {});
    const retry = { ...call, inputResponses: { [key as string]: SAMPLED }, requestState: first.requestState };
    const stolen = await callLeg(beta, retry).catch(errorOf);
    expect(stolen).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
    expect(textOf(await callLeg(alpha, retry))).toBe('LLM response: sampled');
  });
});

/** A target in envelope mode whose call log goes to a fresh folder. */
function withLogs(make: (flags: readonly string[]) => Target) {
  const logs = mkdtempSync(join(tmpdir(), 'mcp-envelope-rounds-'));
  const target = make(['--dialect', 'prov-v0.1', '--name', 'rounds', '--logs', logs]);
  return { name: target.name, target, logs };
}

describe.each([withLogs(httpTarget), withLogs(stdioTarget)])(
  '2026-07-28 input rounds in envelope mode over $name',
  ({ target, logs }) => {
    beforeAll(() => target.start());
    afterAll(async () => {
      await closeAll();
      await target.stop();
      rmSync(logs, { recursive: true, force: true });
    });

    it('wraps only the final result, and logs the call once', async () => {
      const client = statelessEraClient({ sampling: {} });
      client.setRequestHandler('sampling/createMessage', async () => SAMPLED);
      await connected(target, client);
      const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'p' } });
      expect(result.structuredContent).toMatchObject({
        schema_version: 'mcp.envelope.v0.1',
        result: 'LLM response: sampled',
      });
      await client.callTool({ name: 'echo', arguments: { text: 'after' } });
      // pino writes asynchronously; a gateway that has ended has flushed its log. The stdio
      // gateway ends with its client, whose close() waits for the process to exit.
      await client.close();
      await target.stop();
      const lines = readLatestCallLogs(join(logs, 'rounds'));
      expect(lines.map((line) => line.tool)).toEqual(['test_sampling', 'echo']);
    });
  },
);

const CAP_TOKEN = 'cap-token-0123456789';
const AS_CAP_TOKEN = { requestInit: { headers: { authorization: `Bearer ${CAP_TOKEN}` } } };

describe('a gateway at its limit of parked calls', () => {
  let gateway: HttpGateway;

  beforeAll(async () => {
    gateway = await startHttpGateway({
      fleet: new UpstreamFleet({
        upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
        maxParkedCalls: 1,
      }),
      // A principal the gateway can tell apart: an anonymous one's second call, running beside
      // the parked one, would have its request refused as ambiguous before the cap is reached.
      tokens: [{ token: CAP_TOKEN, tier: 'free' }],
      warmSpare: false,
    });
  });

  afterAll(async () => {
    await closeAll();
    await gateway?.close();
  });

  it('refuses one more with RESOURCE_EXHAUSTED, cancels its upstream call, and keeps the parked one', async () => {
    const client = statelessEraClient({ sampling: {}, elicitation: {} });
    open.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), AS_CAP_TOKEN));
    const before = Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })));
    const call = { name: 'test_sampling', arguments: { prompt: 'p' } };
    const parked = await callLeg(client, call);
    expect(parked.resultType).toBe('input_required');
    const refused = await callLeg(client, { name: 'ask_twice', arguments: {} }).catch(errorOf);
    expect(refused).toMatchObject({ data: { canonical_code: 'RESOURCE_EXHAUSTED' } });
    // The gateway cancels upstream before it answers, so the cancellation is ahead of this call.
    expect(Number(textOf(await client.callTool({ name: 'cancellations', arguments: {} })))).toBe(before + 1);
    const [key] = Object.keys(parked.inputRequests ?? {});
    const done = await callLeg(client, {
      ...call,
      inputResponses: { [key as string]: SAMPLED },
      requestState: parked.requestState,
    });
    expect(textOf(done)).toBe('LLM response: sampled');
  });
});

describe('a gateway at its limit of parked calls, with a short call timeout', () => {
  let gateway: HttpGateway;

  beforeAll(async () => {
    gateway = await startHttpGateway({
      fleet: new UpstreamFleet({
        upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
        upstream: { timeoutMs: 1500 },
        maxParkedCalls: 1,
      }),
      // A principal the gateway can tell apart: an anonymous one's second call, running beside
      // the parked one, would have its request refused as ambiguous before the cap is reached.
      tokens: [{ token: CAP_TOKEN, tier: 'free' }],
      warmSpare: false,
    });
  });

  afterAll(async () => {
    await closeAll();
    await gateway?.close();
  });

  it('frees the place of a parked call that was never retried once its timeout is up', async () => {
    const client = statelessEraClient({ sampling: {}, elicitation: {} });
    open.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), AS_CAP_TOKEN));
    const abandoned = await callLeg(client, { name: 'ask_twice', arguments: {} });
    expect(abandoned.resultType).toBe('input_required');
    const call = { name: 'test_sampling', arguments: { prompt: 'p' } };
    const refused = await callLeg(client, call).catch(errorOf);
    expect(refused).toMatchObject({ data: { canonical_code: 'RESOURCE_EXHAUSTED' } });
    await outlastTimeout(client);
    const next = await callLeg(client, call);
    expect(next.resultType).toBe('input_required');
  });
});
