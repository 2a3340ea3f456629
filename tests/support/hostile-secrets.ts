/**
 * What tests/fixtures/servers/hostile.ts writes on stderr before it crashes:
 * `lines` as written, `secrets` the parts of them that must never reach a
 * caller. Shared so the fixture and its tests cannot drift apart.
 */
export const HOSTILE_SECRETS = [
  'wJalrXUtnFEMI/K7MDENG/hostileEXAMPLEKEY',
  'hunter2-hostile-battery-staple',
  'sk-live-51Hhostileabcdefghijklmnop',
  'eyJhbGciOiJIUzI1NiJ9.eyJob3N0aWxlIjoxfQ.c2lnbmF0dXJl',
] as const;

export const HOSTILE_STDERR_LINES = [
  `AWS_SECRET_ACCESS_KEY=${HOSTILE_SECRETS[0]}`,
  `db password=${HOSTILE_SECRETS[1]}`,
  `api_key: "${HOSTILE_SECRETS[2]}"`,
  `Authorization: Bearer ${HOSTILE_SECRETS[3]}`,
  'hostile: giving up',
];
