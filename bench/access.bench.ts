import { performance } from 'node:perf_hooks';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { FeatureGate } from '../src/envelope/tiers.ts';
import { visibleItems } from '../src/gateway/access/lists.ts';
import { resolveAccess } from '../src/gateway/access/policy.ts';
import { accessPrincipalOf } from '../src/gateway/access/principal.ts';

/**
 * What authorization per identity costs a call, next to the check every call
 * already pays for its tier, measured in the same run on the same calls.
 *
 * - ours: the caller read off its `AuthInfo` (`accessPrincipalOf`) and the
 *   access rules' decision on the tool (`AccessPolicy.decide`), as enforcement
 *   does per call: 8 rules (scopes, claims, tier at least and exactly, a static
 *   token, anonymity) with 14 glob and literal patterns, deny beating allow,
 *   and the search for an upgrade tier on the calls it denies.
 * - peer: the tier gate's check of the same call (`FeatureGate.hintsFor`, as
 *   the pipeline's `deniedByTier` runs it), 24 gated tools.
 *
 * 400,000 calls per batch over 4 callers (an OAuth token with claims, two
 * static tokens, an anonymous caller) and 48 tools of 3 upstreams, batches
 * interleaved, best of 7; then one tools/list of 48 tools filtered per caller.
 */

const BATCH = 400_000;
const ROUNDS = 7;
const UPSTREAMS = ['fs', 'github', 'search'];
const VERBS = ['read', 'write', 'delete', 'list'];
const NOUNS = ['file', 'repo', 'issue', 'index'];
const TOOLS = UPSTREAMS.flatMap((upstream) =>
  VERBS.flatMap((verb) => NOUNS.map((noun) => ({ upstream, name: `${verb}_${noun}` }))),
);

const policy = resolveAccess({
  access: {
    rules: [
      { name: 'basics', allow: ['*/read_*', '*/list_*', 'search/*'] },
      { name: 'ops', when: { scopes: ['mcp:admin'] }, allow: ['fs/*', 'github/*'] },
      { name: 'writers', when: { tier: 'pro' }, allow: ['*/write_*'] },
      { name: 'deleters', when: { tier: 'enterprise' }, allow: ['github/delete_*'] },
      {
        name: 'contractors',
        when: { claims: { groups: 'contractors' } },
        deny: ['*/delete_*', 'fs/write_file'],
      },
      { name: 'ci', when: { token: 'ci', scopes: ['ci'] }, allow: ['github/write_repo', 'github/list_*'] },
      { name: 'trial', when: { tier: { exactly: 'community' } }, deny: ['search/write_index'] },
      { name: 'local', when: { anonymous: true }, deny: ['fs/write_*'] },
    ],
    default: 'deny',
  },
  upstreams: UPSTREAMS,
  order: ['community', 'pro', 'enterprise'],
  anonymousTier: 'community',
  tokens: ['ci', 'viewer'],
  issuer: 'https://issuer.example',
});

const callers: (AuthInfo | undefined)[] = [
  {
    token: 'oauth:https://issuer.example#alice',
    clientId: 'agent',
    scopes: ['mcp:tools', 'mcp:admin'],
    extra: {
      tier: 'pro',
      principal: 'oauth:https://issuer.example#alice',
      subject: 'alice',
      issuer: 'https://issuer.example',
      tokenId: 'jti',
      claims: { groups: ['staff', 'contractors'] },
    },
  },
  { token: 'ci', clientId: 'ci', scopes: ['ci'], extra: { tier: 'pro', principal: 'token:ci' } },
  {
    token: 'viewer',
    clientId: 'viewer',
    scopes: [],
    extra: { tier: 'community', principal: 'token:viewer' },
  },
  undefined,
];
const tiers = ['pro', 'pro', 'community', 'community'];

// The tier gate of the same gateway: half the tools gated at pro or enterprise.
const features: Record<string, string> = {};
TOOLS.forEach(({ upstream, name }, index) => {
  if (index % 2 === 0) features[`${upstream}__${name}`] = index % 4 === 0 ? 'pro' : 'enterprise';
});
const gate = new FeatureGate({ tiers: ['community', 'pro', 'enterprise'], features });
const called = TOOLS.map(({ upstream, name }) => [`${upstream}__${name}`]);

let sink = 0;

function ours(): number {
  const started = performance.now();
  for (let i = 0; i < BATCH; i++) {
    const tool = TOOLS[i % TOOLS.length] as (typeof TOOLS)[number];
    const principal = accessPrincipalOf(callers[i & 3], 'community');
    if (policy.decide(principal, tool.upstream, tool.name).allowed) sink++;
  }
  return ((performance.now() - started) * 1e6) / BATCH;
}

function peer(): number {
  const started = performance.now();
  for (let i = 0; i < BATCH; i++) {
    if (gate.hintsFor(tiers[i & 3] as string, called[i % TOOLS.length] as string[]).length === 0) sink++;
  }
  return ((performance.now() - started) * 1e6) / BATCH;
}

const mine: number[] = [];
const theirs: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  mine.push(ours());
  theirs.push(peer());
}
const a = Math.min(...mine);
const b = Math.min(...theirs);
const denied = TOOLS.length * callers.length;
let refused = 0;
for (const authInfo of callers)
  for (const { upstream, name } of TOOLS)
    if (!policy.decide(accessPrincipalOf(authInfo, 'community'), upstream, name).allowed) refused++;
console.log(
  `${BATCH.toLocaleString('en')} calls per batch, best of ${ROUNDS}; ${refused} of ${denied} caller-tool pairs denied`,
);
console.log(
  `per call: access rules (principal + decision) ${a.toFixed(0)} ns, tier gate (FeatureGate.hintsFor) ${b.toFixed(0)} ns; ` +
    `the access check takes ${(a / b).toFixed(2)}x the tier check`,
);

// One tools/list per caller, filtered.
const listed = new Map(
  UPSTREAMS.map((upstream) => [
    upstream,
    TOOLS.filter((tool) => tool.upstream === upstream).map(({ name }) => ({ name })),
  ]),
);
const LISTS = 20_000;
const started = performance.now();
for (let i = 0; i < LISTS; i++) {
  const principal = accessPrincipalOf(callers[i & 3], 'community');
  for (const [upstream, items] of listed)
    sink += visibleItems(policy, principal, 'tools/list', upstream, items).length;
}
const perList = ((performance.now() - started) * 1000) / LISTS;
console.log(
  `tools/list filtered per caller: ${perList.toFixed(1)} µs for ${TOOLS.length} tools of ${UPSTREAMS.length} upstreams`,
);
if (sink < 0) console.log(sink);
