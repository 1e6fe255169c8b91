// Seed 000 tools may declare an XML body (`content_type: application/xml`, `text/xml` or `…+xml`). The
// model fills JSON arguments like for any tool; this writes them as XML: a single body argument becomes
// the root element (so a tool whose one parameter is `Order` sends `<Order>…</Order>`), several are
// wrapped in `<request>`. Objects nest, arrays repeat their element, null is an empty element, and text is
// escaped, so no argument can open or close an element of its own.
import { scalarText } from './param-encoding.js';
import { InvalidToolArgumentsError } from '../tool-errors.js';

/** The root element when the body has more than one argument. */
export const XML_WRAPPER = 'request';

// XML 1.0 names, restricted to what a JSON property can sensibly be: no colon (namespaces are not ours
// to invent), not starting with `xml` in any case (reserved).
const XML_NAME = /^(?!xml)[A-Za-z_][A-Za-z0-9._-]*$/i;

export function xmlBody(fields: Readonly<Record<string, unknown>>): string {
  const entries = Object.entries(fields).filter(([, value]) => value !== undefined);
  const [only] = entries;
  const body =
    entries.length === 1 && only !== undefined
      ? element(only[0], only[1])
      : element(XML_WRAPPER, Object.fromEntries(entries));
  return `<?xml version="1.0" encoding="UTF-8"?>${body}`;
}

function element(name: string, value: unknown): string {
  if (!XML_NAME.test(name)) {
    throw new InvalidToolArgumentsError(`argument ${JSON.stringify(name)} cannot be an XML element name`);
  }
  if (Array.isArray(value)) return value.map((item: unknown) => element(name, item)).join('');
  if (value === null || value === undefined) return `<${name}/>`;
  if (typeof value === 'object') {
    const children = Object.entries(value as Record<string, unknown>)
      .map(([child, item]) => element(child, item))
      .join('');
    return `<${name}>${children}</${name}>`;
  }
  return `<${name}>${escapeXml(scalarText(value))}</${name}>`;
}

function escapeXml(text: string): string {
  // Characters XML 1.0 cannot carry at all (most C0 controls) would make the document ill-formed.
  if (hasControlCharacter(text)) {
    throw new InvalidToolArgumentsError('an XML body cannot carry control characters');
  }
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A C0 control other than tab, line feed and carriage return. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) return true;
  }
  return false;
}
