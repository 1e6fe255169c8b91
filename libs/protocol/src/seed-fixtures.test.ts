// Every JSON example of seeds 000-004 (comments stripped, placeholders filled, fragments wrapped into the
// object they belong to) parses with its schema, and validates against the exported JSON Schema too.
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ErrorBody } from './errors.js';
import { buildJsonSchemas } from './json-schemas.js';
import {
  ActionQueryResponse,
  ActionRecallRequest,
  ActionRecallResponse,
  ApiSpec,
  ToolDetailResponse,
} from './recall.js';
import { ClearRuntimeConfig, ClearTaskPayload } from './task.js';
import { HttpPlugin } from './tools/http-plugin.js';
import { JsonSchemaObject } from './tools/json-schema.js';
import { ToolJson } from './tools/tool-json.js';
import { ClearVault } from './vault.js';

const FIXTURES = new URL('./__fixtures__/seeds/', import.meta.url);

function loadFixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8'));
}

interface FixtureCase {
  readonly schema: z.ZodType;
  /** The exported JSON Schema document the fixture must also satisfy, when it is a whole document. */
  readonly jsonSchema?: string;
}

const CASES: Readonly<Record<string, FixtureCase>> = {
  '000-s1-1-meta.json': { schema: HttpPlugin.pick({ name: true, description: true }) },
  '000-s1-2-parameters.json': { schema: HttpPlugin.pick({ parameters: true }) },
  '000-s1-3-execution.json': { schema: HttpPlugin.pick({ execution: true }) },
  '000-s1-4-auth-config.json': { schema: HttpPlugin.pick({ auth_config: true }) },
  '000-s1-plugin-from-fragments.json': { schema: HttpPlugin, jsonSchema: 'http-plugin.json' },
  '000-s2-plugin.json': { schema: HttpPlugin, jsonSchema: 'http-plugin.json' },
  '000-s3-sys-ai-plugin-row.json': { schema: HttpPlugin, jsonSchema: 'http-plugin.json' },
  '001-s2-payload.json': { schema: ClearTaskPayload, jsonSchema: 'clear-task-payload.json' },
  '001-s3.3a-model.json': { schema: ClearRuntimeConfig.pick({ model: true }) },
  '001-s3.3b-tools.json': { schema: ClearRuntimeConfig.pick({ tools: true }) },
  '001-s3.3c-vault.json': { schema: ClearRuntimeConfig.pick({ vault: true }) },
  '002-s3-sys-ai-plugin-rows.json': { schema: ClearRuntimeConfig.pick({ tools: true }) },
  '003-s2.2.2-core-fields-external-script.tool.json': { schema: ToolJson, jsonSchema: 'tool-json.json' },
  '003-s2.2.2-core-fields-service-method.tool.json': { schema: ToolJson, jsonSchema: 'tool-json.json' },
  '003-s2.2.3-execute-python-script.tool.json': { schema: ToolJson, jsonSchema: 'tool-json.json' },
  '003-s2.2.3-alternative-handler.tool.json': { schema: ToolJson, jsonSchema: 'tool-json.json' },
  '004-s3.1-request.json': { schema: ActionRecallRequest, jsonSchema: 'action-recall-request.json' },
  '004-s3.1-response.json': { schema: ActionRecallResponse, jsonSchema: 'action-recall-response.json' },
  '004-s4.2.2-action-source.json': { schema: ActionQueryResponse },
  '004-s4.3.1-action-query-output.json': { schema: ActionQueryResponse },
  '004-s4.4.1-tool-detail.json': { schema: ToolDetailResponse },
  '004-s4.4.1-function-parameters.json': { schema: JsonSchemaObject },
  '004-s4.4.2-conversion-input.json': { schema: ApiSpec },
  '004-s4.4.2-conversion-output.json': { schema: JsonSchemaObject },
  '004-s5-recall-response-example.json': {
    schema: ActionRecallResponse,
    jsonSchema: 'action-recall-response.json',
  },
  '004-s6.2-error-body.json': { schema: ErrorBody, jsonSchema: 'error-body.json' },
  '004-s11.1-request.json': { schema: ActionRecallRequest, jsonSchema: 'action-recall-request.json' },
  '004-s11.1-response.json': { schema: ActionRecallResponse, jsonSchema: 'action-recall-response.json' },
};

describe('seed examples', () => {
  it('every fixture file has a case here, and every case a file', () => {
    const files = readdirSync(FIXTURES).filter((name) => name.endsWith('.json'));
    expect(files.sort()).toEqual(Object.keys(CASES).sort());
  });

  it.each(Object.entries(CASES))('%s parses with its schema', (file, { schema }) => {
    const result = schema.safeParse(loadFixture(file));
    expect(result.error?.issues).toBeUndefined();
    expect(result.success).toBe(true);
  });

  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const documents = buildJsonSchemas();
  const withJsonSchema = Object.entries(CASES).filter(([, c]) => c.jsonSchema !== undefined);

  it.each(withJsonSchema)('%s is valid against its exported JSON Schema', (file, { jsonSchema }) => {
    const validate = ajv.compile(documents[jsonSchema ?? ''] ?? {});
    validate(loadFixture(file));
    expect(validate.errors ?? []).toEqual([]);
  });

  it('the seed 001 model fragment keeps its key in clear and defaults tool_protocol', () => {
    const { model } = ClearRuntimeConfig.pick({ model: true }).parse(loadFixture('001-s3.3a-model.json'));
    expect(model.api_key).toBe('sk-oneapi-token...');
    expect(model.tool_protocol).toBe('native');
  });

  it('the seed 001 vault fragment is a clear vault of credential names to values', () => {
    const fragment = loadFixture('001-s3.3c-vault.json') as { vault: unknown };
    expect(ClearVault.parse(fragment.vault)).toEqual({ QCC_KEY: 'sk-88888888', FEISHU_TOKEN: 't-12345678' });
  });
});
