import { EnvelopeError } from '../errors/index.ts';
import type { ProvRecord } from './record.ts';

/**
 * Lineage across records: each record's `parents[]` names the run ids it
 * depends on. The graph must be a DAG (CONFORMANCE_LEVELS.md, level 3).
 */

export interface LineageEdge {
  /** The child run. */
  from: string;
  /** A parent run the child depends on. */
  to: string;
}

export interface LineageReport {
  nodes: string[];
  edges: LineageEdge[];
  /** Runs with no parents. */
  roots: string[];
  /** Parent ids that name no record in the set (not retrievable here). */
  missingParents: string[];
  /** Run ids held by more than one record in the set. */
  duplicateRunIds: string[];
  /** One cycle per strongly connected component that has one, as a run-id path. */
  cycles: string[][];
  /** Parents before children; only when acyclic. */
  order?: string[];
  acyclic: boolean;
}

export class LineageGraph {
  private readonly records = new Map<string, ProvRecord>();
  private readonly duplicates = new Set<string>();

  constructor(records: Iterable<ProvRecord> = []) {
    for (const record of records) this.add(record);
  }

  add(record: ProvRecord): void {
    if (this.records.has(record.run_id)) this.duplicates.add(record.run_id);
    this.records.set(record.run_id, record);
  }

  get(runId: string): ProvRecord | undefined {
    return this.records.get(runId);
  }

  get size(): number {
    return this.records.size;
  }

  /** Ancestors of a run, nearest first (breadth-first), within this set. */
  ancestors(runId: string): string[] {
    const seen = new Set<string>([runId]);
    const queue = [...(this.records.get(runId)?.parents ?? [])];
    const out: string[] = [];
    while (queue.length > 0) {
      const next = queue.shift() as string;
      if (seen.has(next)) continue;
      seen.add(next);
      out.push(next);
      queue.push(...(this.records.get(next)?.parents ?? []));
    }
    return out;
  }

  report(): LineageReport {
    const nodes = [...this.records.keys()].sort();
    const edges: LineageEdge[] = [];
    const missing = new Set<string>();
    for (const id of nodes) {
      for (const parent of (this.records.get(id) as ProvRecord).parents) {
        edges.push({ from: id, to: parent });
        if (!this.records.has(parent)) missing.add(parent);
      }
    }
    const cycles = this.findCycles();
    const report: LineageReport = {
      nodes,
      edges,
      roots: nodes.filter((id) => (this.records.get(id) as ProvRecord).parents.length === 0),
      missingParents: [...missing].sort(),
      duplicateRunIds: [...this.duplicates].sort(),
      cycles,
      acyclic: cycles.length === 0,
    };
    if (report.acyclic) report.order = this.topologicalOrder();
    return report;
  }

  /** Throws LINEAGE_CYCLE when the graph has a cycle. */
  assertAcyclic(): void {
    const cycles = this.findCycles();
    if (cycles.length > 0) {
      throw new EnvelopeError(
        'LINEAGE_CYCLE',
        `Lineage has a cycle: ${(cycles[0] as string[]).join(' -> ')}`,
        {
          cycle: (cycles[0] as string[]).join(' -> '),
        },
      );
    }
  }

  /** Iterative depth-first search (no recursion: lineage chains can be long). */
  private findCycles(): string[][] {
    const state = new Map<string, 'active' | 'done'>();
    const cycles: string[][] = [];
    const seenInCycle = new Set<string>();
    for (const start of [...this.records.keys()].sort()) {
      if (state.has(start)) continue;
      const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
      state.set(start, 'active');
      while (stack.length > 0) {
        const frame = stack[stack.length - 1] as { id: string; next: number };
        const parents = this.records.get(frame.id)?.parents ?? [];
        if (frame.next >= parents.length) {
          state.set(frame.id, 'done');
          stack.pop();
          continue;
        }
        const parent = parents[frame.next++] as string;
        if (!this.records.has(parent)) continue;
        const parentState = state.get(parent);
        if (parentState === 'active') {
          const from = stack.findIndex((entry) => entry.id === parent);
          const cycle = [...stack.slice(from).map((entry) => entry.id), parent];
          if (!cycle.some((id) => seenInCycle.has(id))) {
            for (const id of cycle) seenInCycle.add(id);
            cycles.push(cycle);
          }
        } else if (parentState === undefined) {
          state.set(parent, 'active');
          stack.push({ id: parent, next: 0 });
        }
      }
    }
    return cycles;
  }

  /** Kahn's algorithm over parent → child edges, ties broken by run id for a stable order. */
  private topologicalOrder(): string[] {
    const pending = new Map<string, number>();
    const children = new Map<string, string[]>();
    for (const [id, record] of this.records) {
      const known = record.parents.filter((parent) => this.records.has(parent));
      pending.set(id, new Set(known).size);
      for (const parent of new Set(known)) children.set(parent, [...(children.get(parent) ?? []), id]);
    }
    const ready = [...pending].filter(([, count]) => count === 0).map(([id]) => id);
    ready.sort();
    const order: string[] = [];
    while (ready.length > 0) {
      const id = ready.shift() as string;
      order.push(id);
      for (const child of children.get(id) ?? []) {
        const left = (pending.get(child) as number) - 1;
        pending.set(child, left);
        if (left === 0) {
          ready.push(child);
          ready.sort();
        }
      }
    }
    return order;
  }
}
