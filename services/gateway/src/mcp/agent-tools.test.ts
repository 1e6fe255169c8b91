import { describe, expect, it } from 'vitest';
import { agentToolName, MAX_TOOL_NAME_LENGTH } from './agent-tools.js';

const LEGAL_TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

describe('agent tool names', () => {
  it('an agent is run_<workflow_id>, dots and dashes kept (legal MCP tool name characters)', () => {
    expect(agentToolName('qcc_agent')).toBe('run_qcc_agent');
    expect(agentToolName('team.search-v2')).toBe('run_team.search-v2');
  });

  it('a workflow id too long for the prefix is cut to 128 characters with a digest, and two such ids sharing a prefix get different names', () => {
    const a = `${'a'.repeat(125)}.x`;
    const b = `${'a'.repeat(125)}.y`;

    const [nameA, nameB] = [agentToolName(a), agentToolName(b)];

    expect(nameA).toHaveLength(MAX_TOOL_NAME_LENGTH);
    expect(nameA).toMatch(LEGAL_TOOL_NAME);
    expect(nameA).not.toBe(nameB);
    expect(agentToolName(a)).toBe(nameA);
    expect(agentToolName('b'.repeat(124))).toBe(`run_${'b'.repeat(124)}`);
  });
});
