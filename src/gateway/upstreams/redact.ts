import type { EnvelopeError } from '../../errors/index.ts';
import type { UpstreamSpec } from './upstream.ts';

/**
 * What an upstream wrote on stderr travels to callers inside its failures (a
 * JSON-RPC error's data, an error envelope's details), and servers print their
 * settings when they fail. So every such text is redacted on its way out:
 * values under names that look secret, bearer tokens, private key blocks,
 * passwords in URLs, and the credentials the gateway was configured with,
 * wherever they appear. The operator keeps the full text (`operatorView`).
 */

export const REDACTED = '[redacted]';

/**
 * Names whose values are secrets. `auth` stands for authorization and the
 * like, not for `author`; `pwd` is left out, being the shell's working folder.
 */
const SECRET_WORD =
  'secret|passw(?:or)?d|passphrase|token|api[_ -]?key|access[_ -]?key|private[_ -]?key|client[_ -]?key|credential|cookie|auth(?!or(?:s|ed|ing|ship|ized)?\\b)';

const SECRET_NAME = new RegExp(SECRET_WORD, 'i');

/**
 * `name = value`, `name: value`, `"name": "value"`: the value goes, the name
 * and quotes stay. A name inside a path, or a `file:line:column` after it, is
 * a stack trace's, not a setting. Names are bounded (64 characters either side
 * of the secret word) so that a long run of text costs linear time.
 */
const KEY_VALUE = new RegExp(
  `((?<![\\w./\\\\-])[A-Za-z0-9_.-]{0,64}(?:${SECRET_WORD})[A-Za-z0-9_.-]{0,64}["']?[ \\t]*[:=][ \\t]*)` +
    `(?:"((?:[^"\\\\\\n]|\\\\.)*)"|'([^'\\n]*)'|(?!\\d+:\\d+)((?:(?:basic|bearer|digest|negotiate|token)[ \\t]+)?[^\\s,;&"']+))`,
  'gi',
);

/** A bearer token anywhere (`Bearer eyJ…`), not only after a header name. */
const BEARER = /\b(bearer)[ \t]+[A-Za-z0-9._~+/=-]+/gi;

/** A long token-like string right after a secret-looking name, with no separator (`api key sk-live-…`). */
const NAMED_LONG_VALUE = new RegExp(
  `((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,64}(?:${SECRET_WORD})[A-Za-z0-9_.-]{0,64}[ \\t]+)(?=[A-Za-z0-9+/=_.-]{16,})(?=[^\\s]*\\d)(?=[^\\s]*[A-Za-z])[A-Za-z0-9+/=_.-]+`,
  'gi',
);

/** A PEM private key, whole; the tail of a cut-off text may hold only its end, or only its start. */
const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g;
const PEM_END = /^[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----/;

/** `scheme://user:password@host`: the password goes. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:@/]*:)[^\s@/]+@/gi;

/** Configured values shorter than this are not matched exactly: they would redact ordinary words. */
const MIN_KNOWN_LENGTH = 6;

/** Credentials the running gateway was configured with (bearer tokens, upstream headers and secrets). */
const configured = new Set<string>();

/** Adds configured credentials to those redacted wherever they appear. */
export function rememberCredentials(values: Iterable<string>): void {
  for (const value of values) if (value.length >= MIN_KNOWN_LENGTH) configured.add(value);
}

/**
 * The secrets an upstream's own configuration holds: its HTTP header values
 * (and the credential after an `Authorization` scheme), a URL's password, and
 * its environment values under secret-looking names.
 */
export function credentialsOf(spec: UpstreamSpec): string[] {
  const values: string[] = [];
  if (spec.kind === 'http') {
    for (const value of Object.values(spec.headers ?? {})) {
      values.push(value);
      const scheme = /^[A-Za-z]+[ \t]+(\S+)$/.exec(value);
      if (scheme?.[1]) values.push(scheme[1]);
    }
    try {
      const url = new URL(spec.url);
      if (url.password) values.push(decodeURIComponent(url.password));
      for (const [name, value] of url.searchParams) if (SECRET_NAME.test(name)) values.push(value);
    } catch {
      // A URL that does not parse has no credentials to name.
    }
  } else {
    for (const [name, value] of Object.entries(spec.env ?? {}))
      if (SECRET_NAME.test(name)) values.push(value);
  }
  return values.filter((value) => value.length >= MIN_KNOWN_LENGTH);
}

/** The text with likely secrets replaced by `[redacted]`; `known` values are replaced wherever they appear. */
export function redactSecrets(text: string, known: Iterable<string> = []): string {
  let out = text;
  const exact = [...new Set([...configured, ...known])].filter((value) => value.length >= MIN_KNOWN_LENGTH);
  // Longest first, so a value that contains another goes whole.
  for (const value of exact.sort((a, b) => b.length - a.length)) out = out.split(value).join(REDACTED);
  // Whole blocks first (every BEGIN goes, to its END or the end of the text), then an END whose BEGIN was cut off.
  out = out.replace(PEM_BLOCK, REDACTED).replace(PEM_END, REDACTED);
  out = out.replace(URL_PASSWORD, `$1${REDACTED}@`);
  out = out.replace(KEY_VALUE, (_match, head: string, double?: string, single?: string) =>
    double !== undefined
      ? `${head}"${REDACTED}"`
      : single !== undefined
        ? `${head}'${REDACTED}'`
        : `${head}${REDACTED}`,
  );
  out = out.replace(BEARER, `$1 ${REDACTED}`);
  out = out.replace(NAMED_LONG_VALUE, `$1${REDACTED}`);
  return out;
}

/** The unredacted text of a failure, for the operator's own surfaces (banner, stderr, status board). */
export interface OperatorView {
  message: string;
  stderr?: string;
}

const operatorViews = new WeakMap<EnvelopeError, OperatorView>();

/** Keeps the full text of a failure whose client-facing text was redacted. */
export function keepForOperator(error: EnvelopeError, view: OperatorView): void {
  operatorViews.set(error, view);
}

/** What the operator may read of a failure: its full text where it was redacted, else what it says. */
export function operatorView(error: EnvelopeError): OperatorView {
  const kept = operatorViews.get(error);
  if (kept) return kept;
  const stderr = error.details?.stderr;
  return { message: error.message, ...(typeof stderr === 'string' ? { stderr } : {}) };
}
