// Media types of request bodies: which one to send when several are offered (JSON first, as a model
// writes JSON best), and which body kind each one is.

import { BodyKind } from './conversion.js';

/** `Application/JSON; charset=utf-8` → `application/json`. */
export function essence(mediaType: string): string {
  return (mediaType.split(';')[0] ?? '').trim().toLowerCase();
}

export function isJsonMediaType(mediaType: string): boolean {
  const type = essence(mediaType);
  return type === 'application/json' || type.endsWith('+json') || type.endsWith('/json');
}

function rank(mediaType: string): number {
  const type = essence(mediaType);
  if (type === 'application/json') return 0;
  if (isJsonMediaType(type)) return 1;
  if (type === 'application/x-www-form-urlencoded') return 2;
  if (type === 'multipart/form-data') return 3;
  if (type.startsWith('multipart/')) return 4;
  if (type === 'text/plain') return 5;
  if (type.startsWith('text/') || type.endsWith('+xml') || type.endsWith('/xml')) return 6;
  if (type === '*/*' || type === 'application/*') return 8;
  return 7;
}

/** The preferred media type among `offered` (stable: ties keep document order). */
export function pickMediaType(offered: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const mediaType of offered) if (best === undefined || rank(mediaType) < rank(best)) best = mediaType;
  return best;
}

export function bodyKindOf(mediaType: string, hasSchema: boolean): BodyKind {
  const type = essence(mediaType);
  if (isJsonMediaType(type)) return BodyKind.JSON;
  if (type === 'application/x-www-form-urlencoded') return BodyKind.FORM;
  if (type.startsWith('multipart/')) return BodyKind.MULTIPART;
  if (type.startsWith('text/') || type.endsWith('+xml') || type.endsWith('/xml')) return BodyKind.TEXT;
  if ((type === '*/*' || type === 'application/*') && hasSchema) return BodyKind.JSON;
  return BodyKind.BINARY;
}

/** Whether a multipart part of this media type is file content rather than text. */
export function isFileMediaType(mediaType: string): boolean {
  const type = essence(mediaType);
  return !(type.startsWith('text/') || isJsonMediaType(type) || type.endsWith('xml') || type === '');
}
