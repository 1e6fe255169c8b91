import { describe, expect, it } from 'vitest';
import { ActionScanner, scanReply, type ScannedAction } from './action-scanner.js';

const SEARCH_ACTION = `<ACTION>
  <tool_id>search</tool_id>
  <inputs>
    <input name="q"><![CDATA[agentmesh]]></input>
  </inputs>
</ACTION>`;

/** Feeds `text` in the given pieces, collecting what the scanner hands on and how much it examined. */
function feed(pieces: readonly string[]): {
  chunks: string[];
  prose: string;
  actions: readonly ScannedAction[];
  examined: number;
} {
  const scanner = new ActionScanner();
  const chunks: string[] = [];
  for (const piece of pieces) {
    const out = scanner.push(piece);
    if (out !== '') chunks.push(out);
  }
  const rest = scanner.finish();
  if (rest !== '') chunks.push(rest);
  return { chunks, prose: scanner.prose, actions: scanner.actions, examined: scanner.charactersExamined };
}

function piecesOf(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Delta sizes from one character (the worst case for text held across deltas) to the whole reply. */
const DELTA_SIZES = [1, 7, 100, Number.MAX_SAFE_INTEGER] as const;

/** Every way of cutting `text` in two, and every fixed piece size: none may change the result. */
function everySplit(text: string): string[][] {
  const splits: string[][] = [];
  for (let at = 0; at <= text.length; at++) splits.push([text.slice(0, at), text.slice(at)]);
  for (let size = 1; size <= 12; size++) splits.push(piecesOf(text, size));
  return splits;
}

describe('scanning a streamed reply for ACTION blocks', () => {
  it('when a reply is one ACTION between prose, the prose is handed on and the block is parsed', () => {
    const reply = scanReply(`Let me look that up.\n\n${SEARCH_ACTION}\n\nI will report back.`);
    expect(reply.prose).toBe('Let me look that up.\n\nI will report back.');
    expect(reply.actions).toEqual([
      {
        ok: true,
        action: { toolId: 'search', inputs: [{ name: 'q', text: 'agentmesh' }] },
        raw: SEARCH_ACTION,
      },
    ]);
  });

  it('when the reply arrives cut at any point, the prose and the actions are the same and no block text leaks', () => {
    const text = `Checking.\n\`\`\`xml\n${SEARCH_ACTION}\n\`\`\`\n<ACTION><tool_id>b</tool_id><inputs><input name="x"><![CDATA[</ACTION> <ACTION> ]]]]><![CDATA[>]]></input></inputs></ACTION>\nDone <ACT-like text> stays.`;
    const whole = scanReply(text);
    expect(whole.prose).toBe('Checking.\n\nDone <ACT-like text> stays.');
    expect(whole.actions.map((action) => action.ok && action.action)).toEqual([
      { toolId: 'search', inputs: [{ name: 'q', text: 'agentmesh' }] },
      { toolId: 'b', inputs: [{ name: 'x', text: '</ACTION> <ACTION> ]]>' }] },
    ]);
    for (const pieces of everySplit(text)) {
      const streamed = feed(pieces);
      expect(streamed.prose).toBe(whole.prose);
      expect(streamed.chunks.join('')).toBe(whole.prose);
      expect(streamed.actions).toEqual(whole.actions);
    }
  });

  it('when a self-closing ACTION, a CRLF fence after a block or backticks inside a line are cut anywhere, nothing changes', () => {
    const text = `Try <ACTION/> then.\n${SEARCH_ACTION}\r\n\`\`\`\r\nNext: a \`\`\`js\n${SEARCH_ACTION}`;
    const whole = scanReply(text);
    expect(whole.prose).toBe('Try\n\nthen.\n\nNext: a ```js');
    expect(whole.actions.map((action) => action.ok)).toEqual([false, true, true]);
    for (const pieces of everySplit(text)) {
      const streamed = feed(pieces);
      expect(streamed.prose).toBe(whole.prose);
      expect(streamed.chunks.join('')).toBe(whole.prose);
      expect(streamed.actions).toEqual(whole.actions);
    }
  });

  it('when there is no ACTION, every character is handed on, including trailing layout', () => {
    const text = 'A plain answer with `code`, a < b, <b>bold</b> and a fence:\n```js\nx()\n```\n';
    for (const pieces of everySplit(text)) expect(feed(pieces).chunks.join('')).toBe(text);
  });

  it('when text could still become <ACTION, it is held until the next delta decides', () => {
    const scanner = new ActionScanner();
    expect(scanner.push('Answer: <AC')).toBe('Answer:');
    expect(scanner.push('TIONS are words')).toBe(' <ACTIONS are words');
    expect(scanner.finish()).toBe('');
  });

  it('when several ACTION blocks follow each other, each is a separate call in order', () => {
    const second = SEARCH_ACTION.replace('agentmesh', 'nats');
    const reply = scanReply(`${SEARCH_ACTION}\n${second}`);
    expect(reply.prose).toBe('');
    expect(reply.actions.map((action) => action.ok && action.action.inputs[0]?.text)).toEqual([
      'agentmesh',
      'nats',
    ]);
  });

  it('when the reply ends inside an ACTION, the block is reported unclosed with the tool it names', () => {
    for (const pieces of everySplit('Sure. <ACTION><tool_id>search</tool_id><inputs>')) {
      const streamed = feed(pieces);
      expect(streamed.prose).toBe('Sure.');
      expect(streamed.actions).toEqual([
        {
          ok: false,
          problem: 'the ACTION is not closed: there is no </ACTION> after it',
          toolId: 'search',
          raw: '<ACTION><tool_id>search</tool_id><inputs>',
        },
      ]);
    }
  });

  it('when the reply ends inside a CDATA section, the problem names the section', () => {
    const reply = scanReply(
      '<ACTION><tool_id>a</tool_id><inputs><input name="q"><![CDATA[x</input></ACTION>',
    );
    expect(reply.actions).toMatchObject([
      {
        ok: false,
        problem: 'the reply ended inside a <![CDATA[ section that has no ]]>, so </ACTION> was never reached',
        toolId: 'a',
      },
    ]);
  });

  it('when a new ACTION begins before the last one closed, the first is reported and the second still read', () => {
    const reply = scanReply(`<ACTION><tool_id>a</tool_id>\n${SEARCH_ACTION}`);
    expect(reply.actions).toEqual([
      {
        ok: false,
        problem: 'the ACTION is not closed: a new <ACTION> begins before its </ACTION>',
        toolId: 'a',
        raw: '<ACTION><tool_id>a</tool_id>\n',
      },
      {
        ok: true,
        action: { toolId: 'search', inputs: [{ name: 'q', text: 'agentmesh' }] },
        raw: SEARCH_ACTION,
      },
    ]);
  });

  it('when the opening tag never closes, or the block is self-closing, each is a precise problem', () => {
    expect(scanReply('x <ACTION').prose).toBe('x <ACTION');
    expect(scanReply('<ACTION id="1"').actions).toMatchObject([
      { ok: false, problem: 'the <ACTION> tag itself is not closed with ">"' },
    ]);
    expect(scanReply('<ACTION/>').actions).toMatchObject([
      { ok: false, problem: 'the ACTION is empty (<ACTION/>)' },
    ]);
  });

  it('when a block is malformed inside, its problem comes from the block parser', () => {
    expect(scanReply('<ACTION><inputs></inputs></ACTION>').actions).toMatchObject([
      { ok: false, problem: 'the ACTION has no <tool_id>' },
    ]);
  });

  // The scanner's work is counted (characters examined), not timed: a count is the same on any machine
  // under any load, and a scanner that searches held text again on each delta fails these at once.
  it('when long layout streams in deltas of any size, it is handed on and each character is examined once', () => {
    const layouts = [
      `${' '.repeat(20_000)}end`,
      `Intro.${'\n'.repeat(20_000)}end`,
      `${`${' '.repeat(600)}<AC`.repeat(30)}end`,
      `A fence:\n\`\`\`${'x'.repeat(20_000)} end`,
    ];
    for (const text of layouts)
      for (const size of DELTA_SIZES) {
        const streamed = feed(piecesOf(text, size));
        expect(streamed.chunks.join('')).toBe(text);
        expect(streamed.examined).toBeLessThanOrEqual(text.length);
      }
  });

  it('when blank text and a closing fence follow a block in one-character deltas, each is examined once', () => {
    const text = `${SEARCH_ACTION}\n\`\`\`${' '.repeat(20_000)}\n${' '.repeat(20_000)}Done.`;
    const streamed = feed(piecesOf(text, 1));
    expect(streamed.prose).toBe('Done.');
    expect(streamed.actions).toHaveLength(1);
    expect(streamed.examined).toBeLessThanOrEqual(2 * text.length);
  });

  it('when the blank text is four times as long, the work is four times as large, not sixteen', () => {
    const work = (blank: number): number => feed(piecesOf(`Hi${' '.repeat(blank)}<ACTION`, 1)).examined;
    expect(work(2_000) / work(500)).toBeLessThan(4.5);
  });

  it('when a large CDATA value streams in small deltas, it is read whole and each character is examined a few times', () => {
    const value = JSON.stringify({ rows: Array.from({ length: 5_000 }, (_, i) => `row ${i} ]] </ACTION>`) });
    const text = `<ACTION><tool_id>load</tool_id><inputs><input name="data"><![CDATA[${value}]]></input></inputs></ACTION>`;
    for (const size of DELTA_SIZES) {
      const streamed = feed(piecesOf(text, size));
      expect(streamed.actions).toMatchObject([
        { ok: true, action: { inputs: [{ name: 'data', text: value }] } },
      ]);
      // Once searched, once parsed, and the last two characters of each delta searched again for a split `]]>`.
      expect(streamed.examined).toBeLessThanOrEqual(4 * text.length);
    }
  });
});
