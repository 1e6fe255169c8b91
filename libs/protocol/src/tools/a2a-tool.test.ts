import { describe, expect, it } from 'vitest';
import { importToolDefinition } from './import.js';
import { ToolDefinition } from './canonical.js';
import { requiredCredentials } from './credentials.js';

describe('A2A tools', () => {
  it('when stored with a card URL only, the tool takes a message and needs no credential', () => {
    const imported = importToolDefinition({
      type: 'A2A',
      name: 'ask_travel',
      card_url: 'https://agents.example/.well-known/agent-card.json',
    });
    expect(imported.success).toBe(true);
    if (!imported.success) return;
    expect(imported.format).toBe('canonical');
    expect(imported.tool).toMatchObject({
      type: 'A2A',
      description: '',
      parameters: { type: 'object', required: ['message'] },
    });
    expect(requiredCredentials(imported.tool)).toEqual([]);
  });

  it('when auth names a credential, the assembler is asked for it', () => {
    const tool = ToolDefinition.parse({
      type: 'A2A',
      name: 'ask_travel',
      card_url: 'https://agents.example/card.json',
      skill: 'book-trip',
      auth: { credential: 'TRAVEL_KEY', header: 'X-Api-Key' },
    });
    expect(requiredCredentials(tool)).toEqual(['TRAVEL_KEY']);
  });

  it('when the credential header is one the client owns, or the card URL is not http(s), the tool is refused', () => {
    for (const header of ['Host', 'content-length', 'Proxy-Authorization', 'A2A-Version', 'bad header']) {
      const parsed = ToolDefinition.safeParse({
        type: 'A2A',
        name: 'ask_travel',
        card_url: 'https://agents.example/card.json',
        auth: { credential: 'K', header },
      });
      expect(parsed.success, header).toBe(false);
    }
    const fileUrl = ToolDefinition.safeParse({ type: 'A2A', name: 'x', card_url: 'file:///etc/passwd' });
    expect(fileUrl.success).toBe(false);
  });
});
