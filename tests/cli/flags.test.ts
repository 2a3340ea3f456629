import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.ts';
import { REPO_ROOT } from '../helpers/cli.ts';

/** Every command and subcommand by its full name (`ledger verify`). */
function commands(program: Command): Map<string, Command> {
  const found = new Map<string, Command>();
  const walk = (command: Command, prefix: string) => {
    for (const sub of command.commands) {
      const name = `${prefix}${sub.name()}`;
      found.set(name, sub);
      walk(sub, `${name} `);
    }
  };
  walk(program, '');
  return found;
}

const program = buildProgram({
  io: { stdout: () => {}, stderr: () => {}, stdin: '', env: {}, cwd: REPO_ROOT },
  exitCode: 0,
});
const all = commands(program);
const longFlags = (name: string) => all.get(name)?.options.map((option) => option.long) ?? [];

describe('flags agree across commands', () => {
  it('a flag that several commands take is spelled, and takes its value, the same way in each', () => {
    const spelled = new Map<string, Set<string>>();
    for (const command of all.values()) {
      for (const option of command.options) {
        if (option.long === undefined || option.negate) continue;
        const value = option.required ? 'value' : option.optional ? 'optional value' : 'switch';
        const forms = spelled.get(option.long) ?? new Set();
        forms.add(value);
        spelled.set(option.long, forms);
      }
    }
    for (const [flag, forms] of spelled) expect([...forms], flag).toHaveLength(1);
  });

  it('verify and ledger verify take the same folder and key flags', () => {
    for (const flag of ['--artifacts', '--public-key']) {
      expect(longFlags('verify'), flag).toContain(flag);
      expect(longFlags('ledger verify'), flag).toContain(flag);
    }
  });

  it('the ledger commands that sign or check checkpoints take the keys and files as sign and verify do', () => {
    expect(longFlags('ledger checkpoint')).toContain('--private-key');
    expect(longFlags('sign')).toContain('--private-key');
    expect(longFlags('ledger consistency')).toContain('--public-key');
    for (const name of ['ledger verify', 'ledger prove'])
      expect(longFlags(name), name).toContain('--checkpoint');
  });

  it('wrap and convert name the tool and the request the same way', () => {
    for (const flag of ['--tool-name', '--request-id', '--text']) {
      expect(longFlags('wrap'), flag).toContain(flag);
      expect(longFlags('convert'), flag).toContain(flag);
    }
  });

  it('every ledger command takes --db, and none requires it', () => {
    for (const name of [
      'ledger list',
      'ledger show',
      'ledger verify',
      'ledger add',
      'ledger checkpoint',
      'ledger prove',
      'ledger consistency',
    ]) {
      const db = all.get(name)?.options.find((option) => option.long === '--db');
      expect(db, name).toBeDefined();
      expect(db?.mandatory, name).toBe(false);
    }
  });
});
