// Chooses what an operation's request body is sent as: one media type among those offered (JSON
// preferred, the choice recorded as a note) and its schema and per-property encoding.

import type { BodyKind } from './conversion.js';
import { asString, isJsonObject, type JsonObject } from './json.js';
import { bodyKindOf, pickMediaType } from './media-types.js';
import { NoteCode, type NoteCollector } from './notes.js';
import type { RefResolver } from './ref-resolver.js';

export interface SelectedBody {
  readonly contentType: string;
  readonly kind: BodyKind;
  /** The raw Schema Object (possibly a `$ref`), undefined when none is declared. */
  readonly schema: unknown;
  /** The media type's `encoding` map (multipart/form part content types and styles). */
  readonly encoding: JsonObject;
  readonly required: boolean;
  readonly description: string | undefined;
}

export function selectRequestBody(
  raw: unknown,
  resolver: RefResolver,
  notes: NoteCollector,
  source: string | undefined,
): SelectedBody | undefined {
  if (raw === undefined) return undefined;
  const deref = resolver.deref(raw);
  if (!deref.ok) {
    notes.add(NoteCode.UNRESOLVED_REF, `request body ${deref.ref}: ${deref.reason}`, source);
    return undefined;
  }
  const body = deref.value;
  const where = deref.pointer ?? source;
  if (!isJsonObject(body) || !isJsonObject(body.content)) {
    notes.add(NoteCode.INVALID_INPUT, 'the request body has no `content` map and was ignored', where);
    return undefined;
  }
  const offered = Object.keys(body.content);
  const contentType = pickMediaType(offered);
  if (contentType === undefined) return undefined;
  if (offered.length > 1) {
    const others = offered.filter((type) => type !== contentType).join(', ');
    notes.add(
      NoteCode.CONTENT_TYPE_CHOSEN,
      `the body is sent as ${contentType} (also offered: ${others})`,
      where,
    );
  }
  const media = isJsonObject(body.content[contentType]) ? body.content[contentType] : {};
  return {
    contentType,
    kind: bodyKindOf(contentType, media.schema !== undefined),
    schema: media.schema,
    encoding: isJsonObject(media.encoding) ? media.encoding : {},
    required: body.required === true,
    description: asString(body.description),
  };
}
