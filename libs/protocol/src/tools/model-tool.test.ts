import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ModelTool } from '../chat.js';
import { fromHttpPlugin } from './adapters.js';
import type { HttpTool, ToolDefinition } from './canonical.js';
import { requiredCredentials } from './credentials.js';
import { HttpPlugin } from './http-plugin.js';
import { importToolDefinition } from './import.js';
import { toModelTool } from './model-tool.js';

const plugin = HttpPlugin.parse(
  JSON.parse(readFileSync(new URL('../__fixtures__/seeds/000-s2-plugin.json', import.meta.url), 'utf8')),
);

describe('toModelTool', () => {
  it('shows the model only name, description and parameters, never execution or auth', () => {
    const tool = fromHttpPlugin(plugin);
    const modelTool = toModelTool(tool);
    expect(ModelTool.parse(modelTool)).toEqual(modelTool);
    expect(Object.keys(modelTool.function).sort()).toEqual(['description', 'name', 'parameters']);
    expect(modelTool).toEqual({
      type: 'function',
      function: {
        name: 'search_company_basic',
        description: plugin.description,
        parameters: plugin.parameters,
      },
    });
    expect(JSON.stringify(modelTool)).not.toMatch(/QCC_KEY|qichacha\.com|auth/);
  });
});

describe('requiredCredentials', () => {
  it('lists the declared credentials plus every auth source, once each', () => {
    const tool: HttpTool = { ...fromHttpPlugin(plugin), required_credentials: ['QCC_KEY', 'AUDIT_KEY'] };
    expect(requiredCredentials(tool)).toEqual(['QCC_KEY', 'AUDIT_KEY', 'QCC_SECRET']);
  });

  it('reads the sources of bearer, basic and oauth2 auth', () => {
    const base = fromHttpPlugin(plugin);
    const bearer: HttpTool = { ...base, auth: { type: 'bearer', token_source: 'GH_TOKEN' } };
    const basic: HttpTool = { ...base, auth: { type: 'basic', username_source: 'U', password_source: 'P' } };
    const oauth: HttpTool = {
      ...base,
      auth: {
        type: 'oauth2',
        oauth2: {
          token_url: 'https://auth.example.com/token',
          client_id_source: 'ID',
          client_secret_source: 'SECRET',
        },
        mapping: [{ source: 'TENANT', target: 'X-Tenant', location: 'header' }],
      },
    };
    expect(requiredCredentials(bearer)).toEqual(['GH_TOKEN']);
    expect(requiredCredentials(basic)).toEqual(['U', 'P']);
    expect(requiredCredentials(oauth)).toEqual(['ID', 'SECRET', 'TENANT']);
  });

  it('needs nothing for a native tool', () => {
    const native: ToolDefinition = {
      type: 'NATIVE',
      name: 'deep_search',
      description: 'Searches deeply.',
      parameters: { type: 'object' },
      class_name: 'DeepSearchTool',
    };
    expect(requiredCredentials(native)).toEqual([]);
  });
});

describe('toModelTool for a seed 003 tool', () => {
  const scriptTool = (extra: Record<string, unknown> = {}): ToolDefinition => {
    const imported = importToolDefinition({
      toolId: 'core:echo',
      displayName: 'Echo Script',
      description: 'Echoes its input.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'echo.py', language: 'python' },
      parameters: { type: 'object', properties: { message: { type: 'string' } } },
      ...extra,
    });
    if (!imported.success) throw new Error('the seed 003 tool did not import');
    return imported.tool;
  };

  it('the display name and every example (input and expected output) reach the model in the description', () => {
    const { description } = toModelTool(
      scriptTool({
        examples: [
          {
            description: 'Echo a greeting.',
            input: { message: 'hi' },
            expectedOutput: { echoed: 'hi' },
          },
          { input: { message: '' } },
        ],
      }),
    ).function;
    expect(description).toBe(
      [
        'Echo Script: Echoes its input.',
        '',
        'Examples:',
        '- Echo a greeting. arguments {"message":"hi"} → {"echoed":"hi"}',
        '- arguments {"message":""}',
      ].join('\n'),
    );
  });

  it('without examples, the description is the display name and the description', () => {
    expect(toModelTool(scriptTool()).function.description).toBe('Echo Script: Echoes its input.');
  });
});
