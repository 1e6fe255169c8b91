/**
 * Writes a tool call as the `<ACTION>` block the protocol describes, so a conversation carried in native
 * tool-call form reads back to the model as the text it wrote. Strings go in as they are; every other
 * value as JSON; each in a CDATA section, with any `]]>` inside split across two sections.
 */

export function formatAction(toolId: string, args: Readonly<Record<string, unknown>>): string {
  const inputs = Object.entries(args).map(
    ([name, value]) => `    <input name="${escapeAttribute(name)}">${cdata(inputText(value))}</input>`,
  );
  return [
    '<ACTION>',
    `  <tool_id>${escapeText(toolId)}</tool_id>`,
    ...(inputs.length === 0 ? ['  <inputs></inputs>'] : ['  <inputs>', ...inputs, '  </inputs>']),
    '</ACTION>',
  ].join('\n');
}

/** A CDATA section holding `text` exactly; `]]>` cannot appear inside one, so it is split across two. */
export function cdata(text: string): string {
  return `<![CDATA[${text.replaceAll(']]>', ']]]]><![CDATA[>')}]]>`;
}

function inputText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
}

function escapeText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function escapeAttribute(text: string): string {
  return escapeText(text).replaceAll('"', '&quot;');
}
