import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/index.ts';
import { carriedClaims, claimAt, claimsHold } from '../../../src/gateway/access/claims.ts';
import { ruleNameOfUri, uriRuleNames, visibleItems } from '../../../src/gateway/access/lists.ts';
import { compileGlob, compilePattern, globMatches } from '../../../src/gateway/access/patterns.ts';
import { type AccessPrincipal, type RawAccess, resolveAccess } from '../../../src/gateway/access/policy.ts';
import { accessPrincipalOf, callerIdentity } from '../../../src/gateway/access/principal.ts';
import { callLabels, labelValue } from '../../../src/gateway/enforcement/enforcement.ts';

const ORDER = ['community', 'pro', 'enterprise'];

function policy(access: RawAccess) {
  return resolveAccess({
    access,
    upstreams: ['fs', 'gh'],
    order: ORDER,
    anonymousTier: 'community',
    tokens: ['ci'],
    issuer: 'https://issuer.example',
  });
}

const anonymous: AccessPrincipal = { anonymous: true, scopes: [], tier: 'community' };
const caller = (extra: Partial<AccessPrincipal>): AccessPrincipal => ({
  anonymous: false,
  scopes: [],
  tier: 'community',
  ...extra,
});

describe('patterns', () => {
  it('match `*` as any run of characters, `/` included, and everything else as itself', () => {
    const pattern = compilePattern('fs/file:///public/*') as NonNullable<ReturnType<typeof compilePattern>>;
    expect(pattern.upstream).toBe('fs');
    expect(globMatches(pattern.name, 'file:///public/a/b.txt')).toBe(true);
    expect(globMatches(pattern.name, 'file:///private/a')).toBe(false);
    // Regular-expression characters are themselves.
    expect(globMatches(compileGlob('a.b*'), 'aXb')).toBe(false);
    expect(globMatches(compileGlob('a.b*'), 'a.b')).toBe(true);
    expect(globMatches(compileGlob('*.txt'), 'notes.txt')).toBe(true);
    expect(globMatches(compileGlob('*.txt'), 'notes.txt.bak')).toBe(false);
    expect(globMatches(compileGlob('a*b*c'), 'a-b-c')).toBe(true);
    expect(globMatches(compileGlob('a*b*c'), 'a-c-b')).toBe(false);
    expect(globMatches(compileGlob('**'), '')).toBe(true);
    expect(globMatches(compileGlob('exact'), 'exact')).toBe(true);
    expect(globMatches(compileGlob('exact'), 'exactly')).toBe(false);
    expect(compilePattern('nothing')).toBeUndefined();
    expect(compilePattern('/x')).toBeUndefined();
    expect(compilePattern('x/')).toBeUndefined();
  });

  it('are compiled once per text', () => {
    expect(compileGlob('read_*')).toBe(compileGlob('read_*'));
  });
});

describe('decisions', () => {
  it('let deny beat allow, whichever rule comes first, and fall back to the default', () => {
    const rules = policy({
      rules: [
        { name: 'all', allow: ['*/*'] },
        { name: 'no-writes', when: { claims: { groups: 'contractors' } }, deny: ['*/write_*'] },
      ],
      default: 'deny',
    });
    const contractor = caller({
      issuer: 'https://issuer.example',
      claims: { groups: ['staff', 'contractors'] },
    });
    expect(rules.decide(contractor, 'fs', 'write_file')).toEqual({ allowed: false, rule: 'no-writes' });
    expect(rules.decide(contractor, 'fs', 'read_file')).toEqual({ allowed: true, rule: 'all' });
    expect(rules.decide(caller({ claims: { groups: 'staff' } }), 'fs', 'write_file')).toEqual({
      allowed: true,
      rule: 'all',
    });
    const none = policy({ rules: [{ allow: ['fs/read_file'] }], default: 'deny' });
    expect(none.decide(anonymous, 'gh', 'read_file')).toEqual({ allowed: false, rule: 'default' });
    expect(none.decide(anonymous, 'fs', 'read_file')).toEqual({ allowed: true, rule: '/access/rules/0' });
  });

  it('take `tier` as that tier or above, `{exactly}` as that tier alone, and name the lowest tier that would allow', () => {
    const rules = policy({
      rules: [
        { name: 'pro', when: { tier: 'pro' }, allow: ['gh/delete_*'] },
        { name: 'not-community', when: { tier: { exactly: 'community' } }, deny: ['fs/export'] },
      ],
      default: 'deny',
    });
    expect(rules.decide(caller({ tier: 'enterprise' }), 'gh', 'delete_repo').allowed).toBe(true);
    expect(rules.decide(anonymous, 'gh', 'delete_repo')).toEqual({
      allowed: false,
      rule: 'default',
      upgradeTier: 'pro',
    });
    expect(rules.visible(anonymous, 'gh', 'delete_repo')).toBe(true);
    // Denied whatever the tier: hidden.
    expect(rules.decide(caller({ tier: 'pro' }), 'fs', 'export')).toEqual({
      allowed: false,
      rule: 'default',
    });
    expect(rules.visible(caller({ tier: 'pro' }), 'fs', 'export')).toBe(false);
    // A tier outside the order reaches no `tier` condition.
    expect(rules.decide(caller({ tier: 'gold' }), 'gh', 'delete_repo')).toEqual({
      allowed: false,
      rule: 'default',
    });
  });

  it('match scopes (all of them), the static token, the issuer and anonymity', () => {
    const rules = policy({
      rules: [
        { name: 'ops', when: { scopes: ['ops', 'write'] }, allow: ['fs/*'] },
        { name: 'ci', when: { token: 'ci' }, allow: ['gh/build'] },
        { name: 'sso', when: { issuer: 'https://issuer.example' }, allow: ['gh/search'] },
        { name: 'local', when: { anonymous: true }, allow: ['gh/local'] },
      ],
      default: 'deny',
    });
    expect(rules.decide(caller({ scopes: ['ops'] }), 'fs', 'x').allowed).toBe(false);
    expect(rules.decide(caller({ scopes: ['write', 'ops'] }), 'fs', 'x').allowed).toBe(true);
    expect(rules.decide(caller({ token: 'ci' }), 'gh', 'build').allowed).toBe(true);
    expect(rules.decide(caller({ token: 'other' }), 'gh', 'build').allowed).toBe(false);
    expect(rules.decide(caller({ issuer: 'https://issuer.example' }), 'gh', 'search').allowed).toBe(true);
    expect(rules.decide(anonymous, 'gh', 'local').allowed).toBe(true);
    expect(rules.decide(caller({ token: 'ci' }), 'gh', 'local').allowed).toBe(false);
  });

  it('filter a list by each item’s name, a resource by its URI, a skill’s files by the skill', () => {
    const rules = policy({
      rules: [{ allow: ['fs/read_*', 'fs/file:///public/*', 'fs/public-skill'] }],
      default: 'deny',
    });
    const tools = [{ name: 'read_file' }, { name: 'write_file' }];
    expect(visibleItems(rules, anonymous, 'tools/list', 'fs', tools)).toEqual([{ name: 'read_file' }]);
    const resources = [
      { uri: 'file:///public/a' },
      { uri: 'file:///secret/b' },
      { uri: 'skill://public-skill/SKILL.md' },
      { uri: 'skill://ops-skill/SKILL.md' },
    ];
    expect(visibleItems(rules, anonymous, 'resources/list', 'fs', resources).map((item) => item.uri)).toEqual(
      ['file:///public/a', 'skill://public-skill/SKILL.md'],
    );
    expect(ruleNameOfUri('skill://public-skill/references/A.md')).toBe('public-skill');
    expect(ruleNameOfUri('file:///x')).toBe('file:///x');
    // Lists nobody filters pass whole.
    expect(visibleItems(rules, anonymous, 'tasks/list', 'fs', [{ taskId: 't' }])).toEqual([{ taskId: 't' }]);
  });
});

describe('claims', () => {
  it('are read by dotted path, a name with dots first, and only comparable values are kept', () => {
    const claims = {
      org: { role: 'admin' },
      'https://example.com/groups': ['a', 'b', { nested: true }],
      deep: { list: [1, 2] },
      object: { not: 'comparable' },
    };
    expect(claimAt(claims, 'org.role')).toBe('admin');
    expect(claimAt(claims, 'org.missing')).toBeUndefined();
    expect(
      carriedClaims(claims, ['org.role', 'https://example.com/groups', 'deep.list', 'object', 'absent']),
    ).toEqual({ 'org.role': 'admin', 'https://example.com/groups': ['a', 'b'], 'deep.list': [1, 2] });
  });

  it('named __proto__ or constructor are members like any other, and inherited members are no claims', () => {
    const claims = JSON.parse('{"__proto__":["admins"],"constructor":"x"}') as Record<string, unknown>;
    const carried = carriedClaims(claims, ['__proto__', 'constructor', 'toString', 'hasOwnProperty.length']);
    expect(Object.keys(carried).sort()).toEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(carried, '__proto__')?.value).toEqual(['admins']);
    expect(Object.getPrototypeOf(carried)).toBeNull();
    expect(claimsHold(carried, [['__proto__', 'admins']])).toBe(true);
    expect(claimsHold(carried, [['toString', 'x']])).toBe(false);
  });
});

describe('the caller as rules, the log and the record see it', () => {
  const oauth = {
    token: 'oauth:https://issuer.example#alice',
    clientId: 'agent',
    scopes: ['mcp:tools'],
    extra: {
      tier: 'pro',
      principal: 'oauth:https://issuer.example#alice',
      subject: 'alice',
      issuer: 'https://issuer.example',
      tokenId: 'jti-1',
      claims: { groups: ['ops'] },
    },
  };
  const token = {
    token: 'ci',
    clientId: 'ci',
    scopes: ['ops'],
    extra: { tier: 'community', principal: 'token:ci' },
  };

  it('reads an access token, a static token and no credential', () => {
    expect(accessPrincipalOf(oauth, 'community')).toEqual({
      anonymous: false,
      issuer: 'https://issuer.example',
      scopes: ['mcp:tools'],
      claims: { groups: ['ops'] },
      tier: 'pro',
    });
    expect(accessPrincipalOf(token, 'community')).toEqual({
      anonymous: false,
      token: 'ci',
      scopes: ['ops'],
      tier: 'community',
    });
    expect(accessPrincipalOf(undefined, 'free')).toEqual({ anonymous: true, scopes: [], tier: 'free' });
    // An anonymous HTTP caller's AuthInfo names an address, no tier.
    expect(
      accessPrincipalOf({ token: '', clientId: '', scopes: [], extra: { principal: 'anonymous:1' } }, 'free'),
    ).toEqual({ anonymous: true, scopes: [], tier: 'free' });
  });

  it('labels the record with only the members there are, never longer than 200 characters', () => {
    expect(callLabels(callerIdentity(oauth), { allowed: true, rule: 'ops' })).toEqual({
      principal: 'oauth:https://issuer.example#alice',
      principal_subject: 'alice',
      principal_issuer: 'https://issuer.example',
      principal_client_id: 'agent',
      principal_tier: 'pro',
      principal_token_id: 'jti-1',
      access_decision: 'allow',
      access_rule: 'ops',
    });
    expect(callLabels(callerIdentity(token), undefined)).toEqual({
      principal: 'token:ci',
      principal_tier: 'community',
      principal_token_id: 'ci',
    });
    expect(callLabels(undefined, undefined)).toBeUndefined();
    const long = `${'x'.repeat(300)}`;
    const label = labelValue(long);
    expect(label).toHaveLength(200);
    expect(label).toMatch(/^x{176}…sha256:[0-9a-f]{16}$/);
    expect(labelValue(`${'y'.repeat(200)}`)).toBe('y'.repeat(200));
    // Never half of a surrogate pair.
    expect(labelValue(`${'z'.repeat(175)}😀${'z'.repeat(100)}`)).toMatch(/^z{175}…sha256:/);
    // A lone surrogate (no canonical JSON form) becomes U+FFFD, and the digest keeps such values apart.
    const lone = labelValue('al\ud800ice');
    expect(lone).toMatch(/^al\ufffdice…sha256:[0-9a-f]{16}$/);
    expect(labelValue('al\udbffice')).not.toBe(lone);
    expect(() => canonicalize({ labels: { principal_subject: lone } })).not.toThrow();
  });
});

describe('the names a URI goes by for rules', () => {
  it.each([
    ['file:///public/readme.txt', ['file:///public/readme.txt']],
    ['file:///public/../secret/keys.txt', ['file:///public/../secret/keys.txt', 'file:///secret/keys.txt']],
    [
      'file:///public/%2e%2E/secret/keys.txt',
      ['file:///public/%2e%2E/secret/keys.txt', 'file:///secret/keys.txt'],
    ],
    [
      'file:///public/..%2fsecret/keys.txt',
      ['file:///public/..%2fsecret/keys.txt', 'file:///secret/keys.txt'],
    ],
    ['file:///public/%252e%252e/secret/k', ['file:///public/%252e%252e/secret/k', 'file:///secret/k']],
    ['file:///%73ecret/keys.txt', ['file:///%73ecret/keys.txt', 'file:///secret/keys.txt']],
    [
      'file:///public\\..\\secret\\keys.txt',
      ['file:///public\\..\\secret\\keys.txt', 'file:///secret/keys.txt'],
    ],
    ['file:///../../etc/passwd', ['file:///../../etc/passwd', 'file:///etc/passwd']],
    ['skill://public-skill/../ops-skill/SKILL.md', ['public-skill', 'ops-skill']],
    ['skill://public-skill/SKILL.md', ['public-skill']],
    ['db://x/%E0%A4%A', ['db://x/%E0%A4%A']],
    ['urn:isbn:0451450523', ['urn:isbn:0451450523']],
  ])('%s', (uri, names) => {
    expect(uriRuleNames(uri)).toEqual(names);
  });
});
