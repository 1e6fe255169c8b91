/**
 * Reads what is inside one `<ACTION>…</ACTION>` block (seed 003 §3.1): a `<tool_id>` and an optional
 * `<inputs>` holding `<input name="…">` elements whose values are CDATA sections or plain text. It is a small
 * XML reader written for what models produce: whitespace anywhere between elements, tag names in any case,
 * entities in plain text, a `<` that starts no tag read as text. Anything it cannot read gives one problem,
 * worded for the model so it can write the block again.
 */

export interface ActionInput {
  readonly name: string;
  /** The value exactly as written (CDATA kept verbatim; plain text entity-decoded and trimmed). */
  readonly text: string;
}

export interface ParsedAction {
  readonly toolId: string;
  readonly inputs: readonly ActionInput[];
}

export type ActionParse =
  | { readonly ok: true; readonly action: ParsedAction }
  | {
      readonly ok: false;
      readonly problem: string;
      /** The tool the block seems to name, so the model can be told which call was broken. */
      readonly toolId?: string;
    };

type Node = Element | TextNode;

interface TextNode {
  readonly kind: 'text';
  readonly text: string;
  readonly cdata: boolean;
}

interface Element {
  readonly kind: 'element';
  /** Lower case: tag names are matched without regard to case. */
  readonly name: string;
  /** As written, for messages. */
  readonly tag: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly children: Node[];
}

class ActionSyntax extends Error {}

const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';
// Sticky: each is tried exactly where a `<` is, without slicing the rest of the body off.
const OPEN_TAG =
  /<([A-Za-z_][\w.:-]*)((?:\s+[^\s=/>]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>/]+))?)*)\s*(\/?)>/y;
const CLOSE_TAG = /<\/([A-Za-z_][\w.:-]*)\s*>/y;
const COMMENT = /<!--[\s\S]*?-->/y;
const ATTRIBUTE = /([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+)))?/g;

/** Parses the text between `<ACTION>` and `</ACTION>`. */
export function parseActionBody(body: string): ActionParse {
  try {
    return { ok: true, action: readAction(buildTree(body)) };
  } catch (error) {
    if (!(error instanceof ActionSyntax)) throw error;
    const toolId = toolIdHint(body);
    return toolId === undefined
      ? { ok: false, problem: error.message }
      : { ok: false, problem: error.message, toolId };
  }
}

/** The tool id of a block that could not be read, when one can still be made out. */
export function toolIdHint(text: string): string | undefined {
  const match = /<tool_id\s*>\s*(?:<!\[CDATA\[)?\s*([^<\]\s][^<\]]*?)\s*(?:\]\]>)?\s*<\/tool_id\s*>/i.exec(
    text,
  );
  return match?.[1];
}

function buildTree(body: string): Element {
  const root: Element = {
    kind: 'element',
    name: 'action',
    tag: 'ACTION',
    attributes: new Map(),
    children: [],
  };
  const open: Element[] = [root];
  let text = '';
  const flushText = () => {
    if (text !== '') open.at(-1)!.children.push({ kind: 'text', text: decodeEntities(text), cdata: false });
    text = '';
  };
  let at = 0;
  while (at < body.length) {
    const lt = body.indexOf('<', at);
    if (lt < 0) {
      text += body.slice(at);
      break;
    }
    text += body.slice(at, lt);
    if (body.startsWith(CDATA_OPEN, lt)) {
      const end = body.indexOf(CDATA_CLOSE, lt + CDATA_OPEN.length);
      if (end < 0)
        throw new ActionSyntax(`a <![CDATA[ section in ${describeOpen(open)} is not closed with ]]>`);
      flushText();
      open
        .at(-1)!
        .children.push({ kind: 'text', text: body.slice(lt + CDATA_OPEN.length, end), cdata: true });
      at = end + CDATA_CLOSE.length;
      continue;
    }
    const comment = matchAt(COMMENT, body, lt);
    if (comment) {
      at = lt + comment[0].length;
      continue;
    }
    const close = matchAt(CLOSE_TAG, body, lt);
    if (close) {
      flushText();
      closeElement(open, close[1]!);
      at = lt + close[0].length;
      continue;
    }
    const tag = matchAt(OPEN_TAG, body, lt);
    if (tag) {
      flushText();
      const element: Element = {
        kind: 'element',
        name: tag[1]!.toLowerCase(),
        tag: tag[1]!,
        attributes: readAttributes(tag[2] ?? ''),
        children: [],
      };
      open.at(-1)!.children.push(element);
      if (tag[3] !== '/') open.push(element);
      at = lt + tag[0].length;
      continue;
    }
    // A `<` that starts no tag ("a < b") is text; a strict XML reader would refuse it.
    text += '<';
    at = lt + 1;
  }
  flushText();
  if (open.length > 1) throw new ActionSyntax(`${describeOpen(open)} is not closed`);
  return root;
}

function matchAt(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}

function closeElement(open: Element[], tag: string): void {
  const name = tag.toLowerCase();
  const current = open.at(-1)!;
  if (current !== open[0] && current.name === name) {
    open.pop();
    return;
  }
  const outer = open.findLastIndex((element, index) => index > 0 && element.name === name);
  if (outer < 0) throw new ActionSyntax(`</${tag}> has no matching <${tag}>`);
  throw new ActionSyntax(`</${tag}> comes while ${describeOpen(open)} inside it is still open`);
}

function readAction(root: Element): ParsedAction {
  let toolId: string | undefined;
  let inputs: ActionInput[] | undefined;
  for (const child of root.children) {
    if (child.kind === 'text') {
      if (child.text.trim() !== '') {
        throw new ActionSyntax(
          `unexpected text ${excerpt(child.text)} inside <ACTION>; only <tool_id> and <inputs> belong there`,
        );
      }
    } else if (child.name === 'tool_id') {
      if (toolId !== undefined) throw new ActionSyntax('the ACTION has more than one <tool_id>');
      toolId = readToolId(child);
    } else if (child.name === 'inputs') {
      if (inputs !== undefined) throw new ActionSyntax('the ACTION has more than one <inputs>');
      inputs = readInputs(child);
    } else {
      throw new ActionSyntax(
        `unexpected <${child.tag}> inside <ACTION>; only <tool_id> and <inputs> belong there`,
      );
    }
  }
  if (toolId === undefined) throw new ActionSyntax('the ACTION has no <tool_id>');
  return { toolId, inputs: inputs ?? [] };
}

function readToolId(element: Element): string {
  const markup = element.children.find((child) => child.kind === 'element');
  if (markup) throw new ActionSyntax(`<tool_id> must hold only the tool's id, not <${markup.tag}>`);
  const id = textOf(element.children as TextNode[]).trim();
  if (id === '') throw new ActionSyntax('<tool_id> is empty');
  return id;
}

function readInputs(element: Element): ActionInput[] {
  const inputs: ActionInput[] = [];
  for (const child of element.children) {
    if (child.kind === 'text') {
      if (child.text.trim() !== '') {
        throw new ActionSyntax(
          `unexpected text ${excerpt(child.text)} inside <inputs>; each value belongs in an <input name="…">`,
        );
      }
      continue;
    }
    if (child.name !== 'input') {
      throw new ActionSyntax(
        `unexpected <${child.tag}> inside <inputs>; only <input name="…"> elements belong there`,
      );
    }
    const name = child.attributes.get('name')?.trim();
    if (!name) throw new ActionSyntax(`input #${inputs.length + 1} has no name attribute`);
    if (inputs.some((input) => input.name === name)) throw new ActionSyntax(`input "${name}" is given twice`);
    const markup = child.children.find((node) => node.kind === 'element');
    if (markup) {
      throw new ActionSyntax(
        `input "${name}" contains markup (<${markup.tag}>); wrap its value in <![CDATA[ … ]]>`,
      );
    }
    inputs.push({ name, text: inputValue(child.children as TextNode[]) });
  }
  return inputs;
}

/**
 * With CDATA, the sections (and any non-blank text between them) are the value and the indentation around
 * them is layout; without, the value is the text with its layout whitespace trimmed.
 */
function inputValue(nodes: readonly TextNode[]): string {
  if (!nodes.some((node) => node.cdata)) return textOf(nodes).trim();
  return textOf(nodes.filter((node) => node.cdata || node.text.trim() !== ''));
}

function textOf(nodes: readonly TextNode[]): string {
  return nodes.map((node) => node.text).join('');
}

function readAttributes(source: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const match of source.matchAll(ATTRIBUTE)) {
    attributes.set(match[1]!.toLowerCase(), decodeEntities(match[2] ?? match[3] ?? match[4] ?? ''));
  }
  return attributes;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes the five XML entities and character references; anything else (a bare `&`) stays as written. */
function decodeEntities(text: string): string {
  return text.replace(/&(?:#(\d+)|#x([0-9a-fA-F]+)|(lt|gt|amp|quot|apos));/g, (whole, dec, hex, named) => {
    if (named !== undefined) return NAMED_ENTITIES[named as string] ?? whole;
    const code = dec !== undefined ? Number.parseInt(dec as string, 10) : Number.parseInt(hex as string, 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function describeOpen(open: readonly Element[]): string {
  const element = open.at(-1)!;
  if (element === open[0]) return '<ACTION>';
  const name = element.attributes.get('name');
  return name === undefined ? `<${element.tag}>` : `<${element.tag} name="${name}">`;
}

function excerpt(text: string): string {
  const trimmed = text.trim();
  return JSON.stringify(trimmed.length > 40 ? `${trimmed.slice(0, 40)}…` : trimmed);
}
