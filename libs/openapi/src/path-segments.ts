// Dot segments in URL paths filled from values. `.` and `..` are not data to a URL parser: WHATWG URL (and so
// undici and fetch) removes them, climbing one level for `..`, and it reads `%2e` as a dot too, so
// percent-encoding cannot carry them (`/a/%2E%2E/b` becomes `/b`). Servers that normalise after decoding
// (RFC 3986 §6.2.2) do the same one step later. A value that would become such a segment is therefore refused.

const DOT = '(?:\\.|%2e)';
const DOT_SEGMENT = new RegExp(`^${DOT}${DOT}?$`, 'i');

/**
 * True when `segment` is a dot segment (`.` or `..`, any dot written as `%2e`), as given or percent-decoded
 * once: `%252e` too, for a server that decodes once more before it normalises.
 */
export function isDotSegment(segment: string): boolean {
  return DOT_SEGMENT.test(segment) || DOT_SEGMENT.test(decodeOnce(segment));
}

/**
 * `template` split at its `/` separators, a `{placeholder}` kept whole even if its name held a slash, so each
 * piece is one path segment once filled.
 */
export function templateSegments(template: string): string[] {
  const segments: string[] = [];
  let current = '';
  let inPlaceholder = false;
  for (const char of template) {
    if (char === '{') inPlaceholder = true;
    else if (char === '}') inPlaceholder = false;
    if (char === '/' && !inPlaceholder) {
      segments.push(current);
      current = '';
    } else current += char;
  }
  segments.push(current);
  return segments;
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
