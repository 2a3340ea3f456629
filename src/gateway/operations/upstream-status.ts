import type { Implementation, ServerCapabilities } from '@modelcontextprotocol/server';
import { causeLines } from '../upstreams/child-transport.ts';
import { operatorView } from '../upstreams/redact.ts';
import type { Upstream } from '../upstreams/upstream.ts';

/**
 * What the operator sees of each upstream: the latest state any session's
 * connection to it reached (every 2025-era HTTP session has its own), with why
 * it is down and what it wrote on stderr that says why, and what it declared
 * when it was last ready. Read by the banner, the info page, /healthz and the
 * server card.
 */

export type UpstreamState = 'starting' | 'ready' | 'retrying' | 'gave_up';

export interface UpstreamStatus {
  state: UpstreamState;
  /** Why it is down (not `ready`). */
  reason?: string;
  /** What the process wrote on stderr when it went down: the lines naming a cause, then the last ones (operator surfaces only). */
  stderr?: string[];
}

/** Lines of stderr kept with a failure: enough to see why, bounded. */
const STDERR_LINES = 6;

/** What an upstream said of itself when it was last ready: its identity and capabilities. */
export interface UpstreamDeclaration {
  serverInfo?: Implementation;
  capabilities: ServerCapabilities;
}

/** A listed tool whose schema cannot be compiled: which one, and why. */
export interface ToolSchemaDefect {
  tool: string;
  schema: 'inputSchema' | 'outputSchema';
  message: string;
}

export class UpstreamStatusBoard {
  readonly #states = new Map<string, UpstreamStatus>();
  readonly #defects = new Map<string, ToolSchemaDefect[]>();
  readonly #declared = new Map<string, UpstreamDeclaration>();
  /** Times each upstream that was ready was lost (and so restarted or given up), for the metrics. */
  readonly #restarts = new Map<string, number>();

  constructor(names: readonly string[] = []) {
    for (const name of names) this.#states.set(name, { state: 'starting' });
  }

  /**
   * Records what an upstream connection just became, read from its own state.
   * `gaveUp` is what callers told before the upstream said so itself; it adds nothing now.
   */
  observe(upstream: Upstream): void {
    const state = boardState(upstream);
    if (state === 'ready') {
      this.#states.set(upstream.name, { state });
      // Kept while it is down: it is what the upstream will most likely say again.
      this.#declared.set(upstream.name, {
        ...(upstream.serverInfo ? { serverInfo: upstream.serverInfo } : {}),
        capabilities: upstream.capabilities,
      });
      return;
    }
    if (this.#states.get(upstream.name)?.state === 'ready')
      this.#restarts.set(upstream.name, (this.#restarts.get(upstream.name) ?? 0) + 1);
    // The operator's own view: the full text, where callers got it redacted.
    const failure = upstream.failure ? operatorView(upstream.failure) : undefined;
    const lines = causeLines(failure?.stderr ?? '', STDERR_LINES);
    this.#states.set(upstream.name, {
      state,
      ...(failure ? { reason: failure.message } : {}),
      ...(lines.length > 0 ? { stderr: lines } : {}),
    });
  }

  /** Notes a listed tool's schema that cannot be compiled (once per tool and schema; the caller dedupes). */
  noteSchemaDefect(upstream: string, defect: ToolSchemaDefect): void {
    const known = this.#defects.get(upstream) ?? [];
    known.push(defect);
    this.#defects.set(upstream, known);
  }

  /** The schema defects noted for an upstream's tools, in the order they were seen. */
  schemaDefects(upstream: string): readonly ToolSchemaDefect[] {
    return this.#defects.get(upstream) ?? [];
  }

  /** `tool: schema` of each defect, by upstream, for the upstreams that have any. */
  schemaDefectSummary(): Record<string, string[]> {
    const summary: Record<string, string[]> = {};
    for (const [upstream, defects] of this.#defects)
      summary[upstream] = defects.map(({ tool, schema }) => `${tool}: ${schema}`);
    return summary;
  }

  readonly #pins = new Map<string, { changes: number; refused: number }>();

  /** Counts a definition of the upstream found to differ from its pin (once per definition and digest). */
  notePinChange(upstream: string): void {
    this.#pinCount(upstream).changes++;
  }

  /** Counts a call refused because its tool's definition differs from its pin. */
  notePinRefusal(upstream: string): void {
    this.#pinCount(upstream).refused++;
  }

  #pinCount(upstream: string): { changes: number; refused: number } {
    const known = this.#pins.get(upstream);
    if (known) return known;
    const count = { changes: 0, refused: 0 };
    this.#pins.set(upstream, count);
    return count;
  }

  /** Changed definitions and refused calls, by upstream, for the upstreams that have any. */
  pinSummary(): Record<string, { changes: number; refused: number }> {
    return Object.fromEntries([...this.#pins].map(([upstream, count]) => [upstream, { ...count }]));
  }

  /** What the upstream declared when it was last ready; undefined before it ever was. */
  declared(name: string): UpstreamDeclaration | undefined {
    return this.#declared.get(name);
  }

  get(name: string): UpstreamStatus {
    return this.#states.get(name) ?? { state: 'starting' };
  }

  /** How many times the upstream was lost after it had been ready. */
  restarts(name: string): number {
    return this.#restarts.get(name) ?? 0;
  }

  /** Every upstream's state, in the order they were named. */
  all(): { name: string; status: UpstreamStatus }[] {
    return [...this.#states].map(([name, status]) => ({ name, status }));
  }

  /** `ok` when every upstream is ready, else `degraded`. */
  summary(): 'ok' | 'degraded' {
    return [...this.#states.values()].every((status) => status.state === 'ready') ? 'ok' : 'degraded';
  }
}

/** The operator's word for an upstream's state: a restart in progress is still retrying. */
function boardState(upstream: Upstream): UpstreamState {
  switch (upstream.state) {
    case 'ready':
      return 'ready';
    case 'gave-up':
      return 'gave_up';
    case 'idle':
    case 'starting':
      return upstream.failure ? 'retrying' : 'starting';
    default:
      return 'retrying';
  }
}
