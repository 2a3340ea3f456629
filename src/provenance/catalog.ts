import catalogData from './data/methods.json' with { type: 'json' };

/**
 * prov-spec's method catalog (19 methods, namespaces with their status) and the
 * method-id checks of PROV_METHODS_SPEC.md sections 3, 4 and 7.
 */

export type MethodStatus = 'stable' | 'deprecated' | 'experimental';
export type NamespaceStatus = 'stable' | 'reserved' | 'deprecated';

export interface MethodEntry {
  id: string;
  namespace: string;
  status: MethodStatus;
  since: string;
  summary: string;
  when_to_emit?: string;
  requires?: string[];
  superseded_by?: string;
}

export interface MethodCatalog {
  spec_version: string;
  methods: readonly MethodEntry[];
  namespaces: Readonly<Record<string, { description: string; status: NamespaceStatus }>>;
}

export const METHOD_CATALOG: MethodCatalog = catalogData as MethodCatalog;

/** The grammar of section 3.2. */
export const METHOD_ID_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(_v[0-9]+_[0-9]+)?$/;

const BY_ID: ReadonlyMap<string, MethodEntry> = new Map(
  METHOD_CATALOG.methods.map((entry) => [entry.id, entry]),
);

export function lookupMethod(id: string): MethodEntry | undefined {
  return BY_ID.get(id);
}

export type FindingLevel = 'error' | 'warning' | 'info';

export interface MethodFinding {
  level: FindingLevel;
  code: string;
  method: string;
  message: string;
}

export interface MethodCheckOptions {
  /** Methods outside the catalog are errors instead of warnings. */
  strict?: boolean;
}

/**
 * Checks one method id: grammar (error), reserved namespace (error), unknown
 * namespace (warning: the spec allows new namespaces), outside the catalog
 * (warning, or error when strict), deprecated (accepted, with a warning naming
 * the replacement).
 */
export function checkMethodId(id: string, options: MethodCheckOptions = {}): MethodFinding[] {
  if (!METHOD_ID_PATTERN.test(id)) {
    return [
      {
        level: 'error',
        code: 'METHOD_ID_INVALID',
        method: id,
        message: `Method id "${id}" does not match the grammar ${METHOD_ID_PATTERN.source}`,
      },
    ];
  }
  const namespace = id.split('.')[0] as string;
  const namespaceEntry = METHOD_CATALOG.namespaces[namespace];
  if (namespaceEntry?.status === 'reserved') {
    return [
      {
        level: 'error',
        code: 'METHOD_NAMESPACE_RESERVED',
        method: id,
        message: `Method id "${id}" uses the reserved namespace "${namespace}"`,
      },
    ];
  }
  const findings: MethodFinding[] = [];
  if (!namespaceEntry) {
    findings.push({
      level: 'warning',
      code: 'METHOD_NAMESPACE_UNKNOWN',
      method: id,
      message: `Method id "${id}" uses the unknown namespace "${namespace}"`,
    });
  } else if (namespaceEntry.status === 'deprecated') {
    findings.push({
      level: 'warning',
      code: 'METHOD_NAMESPACE_DEPRECATED',
      method: id,
      message: `Method id "${id}" uses the deprecated namespace "${namespace}"`,
    });
  }
  const entry = BY_ID.get(id);
  if (!entry) {
    findings.push({
      level: options.strict ? 'error' : 'warning',
      code: 'METHOD_NOT_IN_CATALOG',
      method: id,
      message: `Method id "${id}" is not in the catalog (spec ${METHOD_CATALOG.spec_version})`,
    });
  } else if (entry.status === 'deprecated') {
    findings.push({
      level: 'warning',
      code: 'METHOD_DEPRECATED',
      method: id,
      message: entry.superseded_by
        ? `Method "${id}" is deprecated; superseded by "${entry.superseded_by}"`
        : `Method "${id}" is deprecated`,
    });
  } else if (entry.status === 'experimental') {
    findings.push({
      level: 'info',
      code: 'METHOD_EXPERIMENTAL',
      method: id,
      message: `Method "${id}" is experimental`,
    });
  }
  return findings;
}

/** Checks every method id of a record's `methods[]`, plus duplicates. */
export function checkMethodIds(
  methods: readonly string[],
  options: MethodCheckOptions = {},
): MethodFinding[] {
  const findings: MethodFinding[] = [];
  const seen = new Set<string>();
  for (const id of methods) {
    if (seen.has(id)) {
      findings.push({
        level: 'warning',
        code: 'METHOD_DUPLICATE',
        method: id,
        message: `Method "${id}" is claimed more than once`,
      });
      continue;
    }
    seen.add(id);
    findings.push(...checkMethodId(id, options));
  }
  return findings;
}
