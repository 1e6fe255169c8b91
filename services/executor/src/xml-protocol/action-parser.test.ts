import { describe, expect, it } from 'vitest';
import { parseActionBody } from './action-parser.js';

const problemOf = (body: string) => {
  const parsed = parseActionBody(body);
  if (parsed.ok) throw new Error(`expected a problem, got ${JSON.stringify(parsed.action)}`);
  return parsed;
};

describe('reading the inside of an ACTION block', () => {
  it("when the block has the seed 003 example's shape, the tool id and every input come out verbatim", () => {
    const parsed = parseActionBody(`
      <tool_id>core:execute-python-script</tool_id>
      <inputs>
        <input name="scriptPath"><![CDATA[user_scripts/data_analysis/analyzer.py]]></input>
        <input name="inputData"><![CDATA[{"data_url": "http://example.com/data.csv", "threshold": 0.75}]]></input>
        <input name="timeoutMs"><![CDATA[30000]]></input>
      </inputs>
    `);
    expect(parsed).toEqual({
      ok: true,
      action: {
        toolId: 'core:execute-python-script',
        inputs: [
          { name: 'scriptPath', text: 'user_scripts/data_analysis/analyzer.py' },
          { name: 'inputData', text: '{"data_url": "http://example.com/data.csv", "threshold": 0.75}' },
          { name: 'timeoutMs', text: '30000' },
        ],
      },
    });
  });

  it('when values are plain text, entities are decoded and layout whitespace is trimmed', () => {
    const parsed = parseActionBody(
      '<TOOL_ID> search </TOOL_ID><Inputs><input name=\'q\'>\n  a &lt; b &amp;&amp; c &#x263A;\n</input><input name="empty"/></Inputs>',
    );
    expect(parsed).toEqual({
      ok: true,
      action: {
        toolId: 'search',
        inputs: [
          { name: 'q', text: 'a < b && c ☺' },
          { name: 'empty', text: '' },
        ],
      },
    });
  });

  it('when CDATA holds JSON with ]] and ]> in its strings, or a ]]> split across two sections, the value is intact', () => {
    const parsed = parseActionBody(
      '<tool_id>t</tool_id><inputs>' +
        '<input name="a"><![CDATA[{"s": "x]]y", "t": "]>", "u": [[1]]}]]></input>' +
        '<input name="b"><![CDATA[{"end": "]]]]><![CDATA[>"}]]></input>' +
        '<input name="c">  <![CDATA[  padded  ]]>  </input>' +
        '</inputs>',
    );
    expect(parsed.ok && parsed.action.inputs).toEqual([
      { name: 'a', text: '{"s": "x]]y", "t": "]>", "u": [[1]]}' },
      { name: 'b', text: '{"end": "]]>"}' },
      { name: 'c', text: '  padded  ' },
    ]);
  });

  it('when a block has no inputs element, it is a call without arguments', () => {
    expect(parseActionBody('<tool_id>now</tool_id>')).toEqual({
      ok: true,
      action: { toolId: 'now', inputs: [] },
    });
  });

  it.each([
    ['no tool id', '<inputs></inputs>', 'the ACTION has no <tool_id>'],
    ['an empty tool id', '<tool_id> </tool_id>', '<tool_id> is empty'],
    ['two tool ids', '<tool_id>a</tool_id><tool_id>b</tool_id>', 'the ACTION has more than one <tool_id>'],
    [
      'markup in the tool id',
      '<tool_id><b>a</b></tool_id>',
      "<tool_id> must hold only the tool's id, not <b>",
    ],
    ['an unclosed tool id', '<tool_id>search', '<tool_id> is not closed'],
    [
      'stray text',
      '<tool_id>a</tool_id> please run it',
      'unexpected text "please run it" inside <ACTION>; only <tool_id> and <inputs> belong there',
    ],
    [
      'an unknown element',
      '<tool_id>a</tool_id><args></args>',
      'unexpected <args> inside <ACTION>; only <tool_id> and <inputs> belong there',
    ],
    [
      'an input outside inputs',
      '<tool_id>a</tool_id><input name="q">x</input>',
      'unexpected <input> inside <ACTION>; only <tool_id> and <inputs> belong there',
    ],
    [
      'text directly in inputs',
      '<tool_id>a</tool_id><inputs>q=1</inputs>',
      'unexpected text "q=1" inside <inputs>; each value belongs in an <input name="…">',
    ],
    [
      'a wrong element in inputs',
      '<tool_id>a</tool_id><inputs><param name="q">1</param></inputs>',
      'unexpected <param> inside <inputs>; only <input name="…"> elements belong there',
    ],
    [
      'an input without a name',
      '<tool_id>a</tool_id><inputs><input name="a">1</input><input>2</input></inputs>',
      'input #2 has no name attribute',
    ],
    [
      'an input given twice',
      '<tool_id>a</tool_id><inputs><input name="q">1</input><input name="q">2</input></inputs>',
      'input "q" is given twice',
    ],
    [
      'markup in a plain-text input',
      '<tool_id>a</tool_id><inputs><input name="html"><p>hi</p></input></inputs>',
      'input "html" contains markup (<p>); wrap its value in <![CDATA[ … ]]>',
    ],
    [
      'an input closed by the wrong tag (bad nesting)',
      '<tool_id>a</tool_id><inputs><input name="q">1</inputs></input>',
      '</inputs> comes while <input name="q"> inside it is still open',
    ],
    ['a closing tag with no opening', '<tool_id>a</tool_id></inputs>', '</inputs> has no matching <inputs>'],
    ['an unclosed input', '<tool_id>a</tool_id><inputs><input name="q">1', '<input name="q"> is not closed'],
    [
      'an unclosed CDATA section',
      '<tool_id>a</tool_id><inputs><input name="q"><![CDATA[{"a": 1}</input></inputs>',
      'a <![CDATA[ section in <input name="q"> is not closed with ]]>',
    ],
  ])('when the block has %s, the problem says so precisely', (_case, body, problem) => {
    expect(problemOf(body).problem).toBe(problem);
  });

  it('when a broken block still names its tool, the problem carries that id', () => {
    expect(problemOf('<tool_id>core:run</tool_id><inputs><input>1</input></inputs>')).toEqual({
      ok: false,
      problem: 'input #1 has no name attribute',
      toolId: 'core:run',
    });
  });
});
