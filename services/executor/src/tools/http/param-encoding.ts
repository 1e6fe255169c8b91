// Turns argument values into the flat key/value pairs of query strings and form bodies. Nested objects use the
// bracket convention most form parsers read (`a[b]=c`); arrays of scalars repeat the key (`tag=x&tag=y`),
// arrays of objects index it (`a[0][b]=c`). Null and undefined are left out.

export type ParamPair = readonly [key: string, value: string];

export function flattenParam(key: string, value: unknown): ParamPair[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) {
    return value.flatMap((item: unknown, index) =>
      isStructured(item) ? flattenParam(`${key}[${index}]`, item) : flattenParam(key, item),
    );
  }
  if (typeof value === 'object') {
    return Object.entries(value).flatMap(([name, item]) => flattenParam(`${key}[${name}]`, item));
  }
  return [[key, scalarText(value)]];
}

/** How one scalar reads in a header, a cookie, a query or a form value; structures are sent as JSON. */
export function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return JSON.stringify(value) ?? '';
}

function isStructured(value: unknown): boolean {
  return value !== null && typeof value === 'object';
}
