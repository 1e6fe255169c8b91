// OpenAPI parameter serialisation (style + explode) for path, query, header and cookie values, and the
// bracket notation used for nested objects in form bodies and `deepObject` query parameters.

/** One query parameter: name and value parts, joined by `delimiter` (kept literal in the query string). */
export interface QueryPair {
  readonly name: string;
  readonly parts: string[];
  readonly delimiter: string;
}

type Scalar = string | number | boolean | null;

export function scalarText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function isScalar(value: unknown): value is Scalar {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function entriesOf(value: object): Array<[string, unknown]> {
  return Object.entries(value).filter(([, v]) => v !== undefined);
}

/** A path segment value, URL-encoded (styles simple, label, matrix). */
export function serialisePathValue(name: string, value: unknown, style: string, explode: boolean): string {
  const enc = (text: string): string => encodeURIComponent(text);
  if (Array.isArray(value)) {
    const items = value.map((item) => enc(scalarText(item)));
    if (style === 'label') return `.${items.join(explode ? '.' : ',')}`;
    if (style === 'matrix')
      return explode ? items.map((item) => `;${name}=${item}`).join('') : `;${name}=${items.join(',')}`;
    return items.join(',');
  }
  if (value !== null && typeof value === 'object') {
    const pairs = entriesOf(value).map(([k, v]) => [enc(k), enc(scalarText(v))] as const);
    const flat = pairs.flatMap(([k, v]) => [k, v]).join(',');
    const exploded = (separator: string): string => pairs.map(([k, v]) => `${k}=${v}`).join(separator);
    if (style === 'label') return explode ? `.${exploded('.')}` : `.${flat}`;
    if (style === 'matrix') return explode ? `;${exploded(';')}` : `;${name}=${flat}`;
    return explode ? exploded(',') : flat;
  }
  const text = enc(scalarText(value));
  if (style === 'label') return `.${text}`;
  if (style === 'matrix') return `;${name}=${text}`;
  return text;
}

/** Query pairs for one parameter (styles form, spaceDelimited, pipeDelimited, deepObject). */
export function serialiseQueryValue(
  name: string,
  value: unknown,
  style: string,
  explode: boolean,
): QueryPair[] {
  if (Array.isArray(value)) {
    const items = value.map(scalarText);
    if (style === 'deepObject')
      return bracketPairs(name, value).map(([n, v]) => ({ name: n, parts: [v], delimiter: '' }));
    if (explode && style === 'form') return items.map((item) => ({ name, parts: [item], delimiter: '' }));
    const delimiter = style === 'spaceDelimited' ? ' ' : style === 'pipeDelimited' ? '|' : ',';
    return [{ name, parts: items, delimiter }];
  }
  if (value !== null && typeof value === 'object') {
    if (style === 'deepObject')
      return bracketPairs(name, value).map(([n, v]) => ({ name: n, parts: [v], delimiter: '' }));
    const entries = entriesOf(value);
    if (explode) return entries.map(([k, v]) => ({ name: k, parts: [scalarText(v)], delimiter: '' }));
    return [{ name, parts: entries.flatMap(([k, v]) => [k, scalarText(v)]), delimiter: ',' }];
  }
  return [{ name, parts: [scalarText(value)], delimiter: '' }];
}

/** A header value (style simple). */
export function serialiseHeaderValue(value: unknown, explode: boolean): string {
  if (Array.isArray(value)) return value.map(scalarText).join(',');
  if (value !== null && typeof value === 'object') {
    const entries = entriesOf(value);
    return explode
      ? entries.map(([k, v]) => `${k}=${scalarText(v)}`).join(',')
      : entries.flatMap(([k, v]) => [k, scalarText(v)]).join(',');
  }
  return scalarText(value);
}

/** A cookie value (style form; lists and objects comma-joined, as `explode: false` defines). */
export function serialiseCookieValue(value: unknown): string {
  if (Array.isArray(value)) return value.map(scalarText).join(',');
  if (value !== null && typeof value === 'object')
    return entriesOf(value)
      .flatMap(([k, v]) => [k, scalarText(v)])
      .join(',');
  return scalarText(value);
}

/**
 * Bracket notation for nested values: `{a: {b: 1}, c: [x, y]}` under `p` gives `p[a][b]=1`,
 * `p[c][0]=x`, `p[c][1]=y` (Stripe, Rails and PHP read it this way).
 */
export function bracketPairs(name: string, value: unknown): Array<[string, string]> {
  if (Array.isArray(value)) return value.flatMap((item, index) => bracketPairs(`${name}[${index}]`, item));
  if (value !== null && typeof value === 'object') {
    return entriesOf(value).flatMap(([key, item]) => bracketPairs(`${name}[${key}]`, item));
  }
  return [[name, scalarText(value)]];
}

/** Form-body pairs for one field: scalars as is, lists by style, objects in bracket notation. */
export function serialiseFormField(
  name: string,
  value: unknown,
  style: string,
  explode: boolean,
): Array<[string, string]> {
  if (Array.isArray(value) && value.every(isScalar) && style !== 'deepObject') {
    if (style === 'form' && explode) return value.map((item) => [name, scalarText(item)]);
    const delimiter = style === 'spaceDelimited' ? ' ' : style === 'pipeDelimited' ? '|' : ',';
    return [[name, value.map(scalarText).join(delimiter)]];
  }
  return bracketPairs(name, value);
}

// RFC 3986 reserved characters, left as they are for `allowReserved: true`.
const RESERVED = /[:/?#[\]@!$&'()*+,;=]/;

export function encodeQueryComponent(text: string, allowReserved: boolean): string {
  if (!allowReserved) return encodeURIComponent(text);
  return Array.from(text, (char) => (RESERVED.test(char) ? char : encodeURIComponent(char))).join('');
}

export function queryString(pairs: ReadonlyArray<QueryPair & { allowReserved?: boolean }>): string {
  return pairs
    .map((pair) => {
      const value = pair.parts.map((part) => encodeQueryComponent(part, pair.allowReserved ?? false));
      // The comma of `explode: false` stays literal, as OpenAPI's examples show; other delimiters are encoded.
      const joiner = pair.delimiter === ',' ? ',' : encodeURIComponent(pair.delimiter);
      return `${encodeQueryComponent(pair.name, false)}=${value.join(joiner)}`;
    })
    .join('&');
}
