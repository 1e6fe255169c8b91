// `{name}` path templates in a tool's URL (seed 000 `param_placement: path`). Each value is percent-encoded as
// one path segment, so `a b/c` becomes `a%20b%2Fc` and cannot change the route; a value that would make a
// `.` or `..` segment is refused, since URL parsing removes such a segment (encoded or not) and climbs a level.
import { isDotSegment, templateSegments } from '@agentmesh/openapi';
import { InvalidToolArgumentsError } from '../tool-errors.js';

const PLACEHOLDER = /\{([^{}/]+)\}/g;

/** The placeholder names of a URL template, in order of appearance. */
export function placeholderNames(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((match) => match[1] ?? ''))];
}

/** Fills every placeholder from `values`; a placeholder without a usable value is the model's mistake. */
export function fillUrlTemplate(template: string, values: Readonly<Record<string, unknown>>): string {
  const missing = placeholderNames(template).filter((name) => !isPathValue(values[name]));
  if (missing.length > 0) {
    throw new InvalidToolArgumentsError(
      `missing path argument${missing.length === 1 ? '' : 's'}: ${missing.join(', ')} (a string or number is required)`,
      { detail: { missing } },
    );
  }
  const dotSegments = new Set<string>();
  const filled = templateSegments(template).map((segment) => {
    const names = placeholderNames(segment);
    const text = segment.replace(PLACEHOLDER, (_match, name: string) =>
      encodeURIComponent(String(values[name])),
    );
    if (names.length > 0 && isDotSegment(text)) for (const name of names) dotSegments.add(name);
    return text;
  });
  if (dotSegments.size > 0) {
    const names = [...dotSegments];
    throw new InvalidToolArgumentsError(
      `path argument${names.length === 1 ? '' : 's'} ${names.join(', ')} would make a "." or ".." path segment, which changes the request path; use another value`,
      { detail: { dot_segment: names } },
    );
  }
  return filled.join('/');
}

function isPathValue(value: unknown): value is string | number | boolean {
  return (
    (typeof value === 'string' && value.length > 0) ||
    (typeof value === 'number' && Number.isFinite(value)) ||
    typeof value === 'boolean'
  );
}
