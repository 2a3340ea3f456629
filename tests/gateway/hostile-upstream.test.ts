import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOutcome, HOSTILE, MISBEHAVIOURS, type Misbehaviour } from '../support/hostile-behaviours.ts';
import { HOSTILE_SECRETS, HOSTILE_STDERR_LINES } from '../support/hostile-secrets.ts';
import { LineClient } from '../support/line-client.ts';
import { proxiedSession, type RawSession } from '../support/raw-http-session.ts';
import type { Running } from './processes.ts';

/**
 * An upstream that misbehaves every way tests/fixtures/servers/hostile.ts
 * can: each call gets exactly one answer with a stable code, nothing it wrote
 * on stderr that is secret reaches the caller, and the gateway serves the next
 * call.
 */

interface Outcome {
  answers: { id?: unknown; result?: unknown; error?: { code?: unknown; data?: unknown } }[];
  raw: string;
}

/** A gateway to call over one transport. */
interface Front {
  call(id: string, tool: string, args?: Record<string, unknown>): Promise<Outcome>;
  stop(): Promise<void>;
}

async function overStdio(
  flags: string[],
  fixtureArgs: string[] = [],
): Promise<Front & { lines: LineClient }> {
  const lines = await LineClient.start(flags, HOSTILE, fixtureArgs);
  let pings = 0;
  return {
    lines,
    async call(id, tool, args = {}) {
      lines.send(
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } }),
      );
      await lines.answerTo(id, 20_000);
      // Whatever would follow the answer (a second one) is in before the answer to a later ping.
      const ping = `ping-${++pings}`;
      lines.send(`{"jsonrpc":"2.0","id":"${ping}","method":"ping"}`);
      await lines.answerTo(ping);
      const mine = lines.answersTo(id);
      return { answers: mine.map((item) => item.message), raw: mine.map((item) => item.raw).join('\n') };
    },
    stop: () => lines.stop(),
  };
}

async function overHttp(flags: string[]): Promise<Front> {
  const { proxy, session } = await proxiedSession(HOSTILE, flags);
  return {
    async call(id, tool, args = {}) {
      const { mine, text } = await session.call(id, tool, args);
      expect(proxy.child.exitCode).toBeNull();
      return { answers: mine, raw: text };
    },
    stop: () => proxy.stop(),
  };
}

const textOf = (outcome: Outcome) =>
  (outcome.answers[0]?.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text;

/**
 * The call timeout of every gateway here but those that wait out `hang`: far
 * longer than a test lives, so a misbehaviour's own failure is the only one a
 * call can meet, however slow the machine (a 65 MiB answer read under load, a
 * restart after a crash), never TIMEOUT instead.
 */
const NO_TIMEOUT = ['--timeout', '600000'];
/** For `hang` alone, whose one possible failure is the timeout. */
const SHORT_TIMEOUT = ['--timeout', '1500'];

const { hang: HANG, ...ANSWERING } = MISBEHAVIOURS;

describe.each([
  ['stdio', (flags: string[]) => overStdio(flags)],
  ['HTTP', (flags: string[]) => overHttp(flags)],
] as const)('a passthrough gateway over %s in front of a hostile upstream', (_transport, start) => {
  let front: Front;
  let calls = 0;

  beforeAll(async () => {
    front = await start(NO_TIMEOUT);
  });

  afterAll(async () => {
    await front?.stop();
  });

  async function expectServing(on = front): Promise<void> {
    const id = `echo-${++calls}`;
    const after = await on.call(id, 'echo', { text: 'still here' });
    expect(textOf(after)).toBe('still here');
  }

  it('hang: one answer, TIMEOUT, and the next call served', async () => {
    const timing = await start(SHORT_TIMEOUT);
    try {
      const outcome = await timing.call(`hang-${++calls}`, HANG.tool, HANG.args);
      expectOutcome(HANG, outcome.answers, outcome.raw);
      await expectServing(timing);
    } finally {
      await timing.stop();
    }
  });

  it.each(Object.entries(ANSWERING) as [string, Misbehaviour][])(
    '%s: one answer, a stable code, and the next call served',
    async (_name, behaviour) => {
      const outcome = await front.call(`${behaviour.tool}-${++calls}`, behaviour.tool, behaviour.args);
      expectOutcome(behaviour, outcome.answers, outcome.raw);
      await expectServing();
    },
  );

  it('a crash reports its exit code and what it wrote, redacted', async () => {
    const outcome = await front.call(`crash-${++calls}`, 'crash', { code: 7 });
    expectOutcome(MISBEHAVIOURS.crash, outcome.answers, outcome.raw);
    const data = outcome.answers[0]?.error?.data as Record<string, unknown>;
    expect(data.exit_code).toBe(7);
    expect(outcome.raw).toContain('hostile: giving up');
    expect(outcome.raw).toContain('[redacted]');
    await expectServing();
  });

  it('an answer past 64 MiB fails the call, and the next is served', async () => {
    const outcome = await front.call(`huge-${++calls}`, 'huge', { mb: 65 });
    expectOutcome(
      { tool: 'huge', args: {}, expect: { code: 'ADAPTER.EXECUTION.FAILED' } },
      outcome.answers,
      outcome.raw.slice(0, 10_000),
    );
    await expectServing();
  });
});

describe('an envelope-mode gateway in front of a hostile upstream', () => {
  let front: Front & { lines: LineClient };
  let calls = 0;

  beforeAll(async () => {
    front = await overStdio(['--dialect', 'prov-v0.1', ...NO_TIMEOUT]);
  });

  afterAll(async () => {
    await front?.stop();
  });

  /** The error code of an envelope answer. */
  function envelopeCode(outcome: Outcome): unknown {
    const result = outcome.answers[0]?.result as {
      isError?: boolean;
      structuredContent?: { errors?: { code?: string }[] };
    };
    expect(result?.isError, outcome.raw.slice(0, 400)).toBe(true);
    return result.structuredContent?.errors?.[0]?.code;
  }

  async function expectEnvelopeError(on: Front, tool: string, args: Record<string, unknown>, code: string) {
    const outcome = await on.call(`${tool}-${++calls}`, tool, args);
    expect(outcome.answers).toHaveLength(1);
    expect(envelopeCode(outcome)).toBe(code);
    for (const secret of HOSTILE_SECRETS) expect(outcome.raw).not.toContain(secret);
    const after = await on.call(`echo-${++calls}`, 'echo', { text: 'ok' });
    expect(after.answers[0]?.error).toBeUndefined();
  }

  it.each([
    ['crash', { code: 3 }, 'ADAPTER.EXECUTION.FAILED'],
    ['non_utf8', {}, 'ADAPTER.EXECUTION.FAILED'],
    ['deep', { levels: 1_500 }, 'ADAPTER.EXECUTION.FAILED'],
  ] as const)('%s: an error envelope with a stable code, no secret in it', async (tool, args, code) => {
    await expectEnvelopeError(front, tool, args, code);
  });

  it('hang: an error envelope with TIMEOUT, no secret in it', async () => {
    const timing = await overStdio(['--dialect', 'prov-v0.1', ...SHORT_TIMEOUT]);
    try {
      await expectEnvelopeError(timing, 'hang', {}, 'TIMEOUT');
    } finally {
      await timing.stop();
    }
  });

  it.each([
    ['remote_schema', { a: 1 }],
    ['broken_schema', {}],
    ['looping_schema', { x: 1 }],
  ] as const)('%s: an input schema that does not compile fails the call alone', async (tool, args) => {
    const outcome = await front.call(`${tool}-${++calls}`, tool, args);
    expect(outcome.answers).toHaveLength(1);
    expect(envelopeCode(outcome)).toBeTypeOf('string');
    const after = await front.call(`echo-${++calls}`, 'echo', { text: 'ok' });
    expect(after.answers[0]?.result).toMatchObject({ structuredContent: { result: 'ok' } });
  });

  it('a crash fails the calls in flight at once, not at their timeout', async () => {
    const lines = front.lines;
    const hung = `hang-${++calls}`;
    const announced = () => lines.received.filter((item) => item.raw.includes('"hanging"')).length;
    const before = announced();
    lines.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: hung,
        method: 'tools/call',
        params: { name: 'hang', arguments: { announce: true } },
      }),
    );
    // The upstream has the call (it said so) before the crash is sent: the crash cannot overtake it
    // and leave it to a restarted upstream, and with no timeout in reach only the crash can end it.
    await lines.until(() => announced() > before, 10_000, 'the upstream saying it hangs');
    const crash = await front.call(`crash-${++calls}`, 'crash', { code: 2 });
    expect(envelopeCode(crash)).toBe('ADAPTER.EXECUTION.FAILED');
    const inFlight = await lines.answerTo(hung);
    expect(envelopeCode({ answers: [inFlight.message], raw: inFlight.raw })).toBe('ADAPTER.EXECUTION.FAILED');
    expect(lines.answersTo(hung)).toHaveLength(1);
  });

  it('a catastrophic pattern in an input schema is run in linear time: the call is answered', async () => {
    // On a backtracking engine ^(a+)+$ against 64 a's and a ! would not finish in this test's lifetime.
    const refused = await front.call(`redos-${++calls}`, 'redos', { text: `${'a'.repeat(64)}!` });
    expect(refused.answers).toHaveLength(1);
    expect(envelopeCode(refused)).toBe('INVALID_INPUT');
    const matching = await front.call(`redos-${++calls}`, 'redos', { text: 'aaaa' });
    expect(matching.answers[0]?.result).toMatchObject({ structuredContent: { result: 'matched' } });
  });
});

describe('an upstream that serves tools without declaring them', () => {
  let front: Front & { lines: LineClient };

  beforeAll(async () => {
    front = await overStdio(['--dialect', 'prov-v0.1'], ['--undeclared']);
  });

  afterAll(async () => {
    await front?.stop();
  });

  it('is listed and wrapped like any other', async () => {
    front.lines.send('{"jsonrpc":"2.0","id":"list","method":"tools/list"}');
    const listed = await front.lines.answerTo('list');
    const tools = (listed.message.result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    expect(tools).toContain('echo');
    const outcome = await front.call('undeclared-echo', 'echo', { text: 'wrapped' });
    expect(outcome.answers).toHaveLength(1);
    expect(outcome.answers[0]?.result).toMatchObject({
      structuredContent: { schema_version: 'mcp.envelope.v0.1', result: 'wrapped' },
    });
  });
});

/** Whether the process runs: gone, or a zombie this container's init never reaps, is not running. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

describe('an upstream that ignores SIGTERM and the end of its stdin', () => {
  it('is ended with the gateway when the gateway loses its client', async () => {
    const front = await overStdio([], ['--stubborn']);
    const pid = Number(textOf(await front.call('pid', 'pid')));
    expect(running(pid)).toBe(true);
    const exited = new Promise<void>((resolve) => front.lines.child.once('exit', () => resolve()));
    front.lines.child.stdin?.end();
    await exited;
    // The upstream is not this test's child, so it cannot be awaited: it is looked at, for at most 10 s.
    const deadline = Date.now() + 10_000;
    while (running(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    const survived = running(pid);
    // Whatever a failure left behind.
    if (survived) process.kill(pid, 'SIGKILL');
    expect(survived).toBe(false);
  });
});

describe('secrets cut by the edge of the stderr excerpt', () => {
  let front: Front;

  beforeAll(async () => {
    front = await overStdio(NO_TIMEOUT);
  });

  afterAll(async () => {
    await front?.stop();
  });

  // The excerpt is the last KiB of stderr; the filler after the secrets puts its first
  // character `into` characters into what was written.
  const written = `${HOSTILE_STDERR_LINES.join('\n')}\n`;
  let crashes = 0;

  async function excerptFrom(into: number): Promise<string> {
    const filler = 1024 - 1 - (written.length - into);
    const outcome = await front.call(`cut-${++crashes}`, 'crash', { code: 1, filler });
    expect(outcome.answers).toHaveLength(1);
    return outcome.raw;
  }

  /** Twelve characters of a secret in a row are enough to be a leak. */
  function leaked(raw: string, secret: string): boolean {
    for (let at = 0; at + 12 <= secret.length; at++) if (raw.includes(secret.slice(at, at + 12))) return true;
    return false;
  }

  it('are redacted when the excerpt begins at a line', async () => {
    const raw = await excerptFrom(0);
    for (const secret of HOSTILE_SECRETS) expect(leaked(raw, secret), secret).toBe(false);
  });

  // The excerpt is redacted before it is cut, and a line it begins inside is dropped.
  it('are redacted when the excerpt begins inside a secret, its name cut off', async () => {
    const secret = HOSTILE_SECRETS[0];
    const raw = await excerptFrom(written.indexOf(secret) + 4);
    expect(leaked(raw, secret), secret).toBe(false);
  });
});

describe('a request its client cancels, over HTTP', () => {
  let proxy: Running;
  let session: RawSession;

  beforeAll(async () => {
    // A ping answers in milliseconds and a call times out after 1 s: 3 s without a reply is a POST left open.
    ({ proxy, session } = await proxiedSession(HOSTILE, ['--timeout', '1000'], 3_000));
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  // The SDK sends no response for a cancelled request: the POST must end all the same.
  it('still ends the POST that carried it', async () => {
    const reply = await session.post(
      '[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}}]',
    );
    expect(reply.status).toBeLessThan(500);
  });

  // The same, the way a client that gives up on a call sends it: from another POST.
  it('still ends the POST of a call cancelled from another POST, at the latest at its timeout', async () => {
    const call = await fetch(proxy.url, {
      method: 'POST',
      headers: session.headers(),
      body: '{"jsonrpc":"2.0","id":"stuck","method":"tools/call","params":{"name":"hang","arguments":{"announce":true}}}',
      signal: AbortSignal.timeout(3_000),
    });
    // The log message the upstream sends first opens the reply as a stream: the call is in flight.
    const reader = (call.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('hanging');
    const cancelled = await session.post(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"stuck","reason":"gave up"}}',
    );
    expect(cancelled.status).toBe(202);
    // Reads to the end of the reply, which a fixed gateway reaches by 1 s; bounded by the 3 s signal.
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {}
  });

  it('leaves the session serving', async () => {
    const reply = await session.post('{"jsonrpc":"2.0","id":8,"method":"ping"}');
    expect(reply.answers).toEqual([{ jsonrpc: '2.0', id: 8, result: {} }]);
  });
});
