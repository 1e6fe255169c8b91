// The checked-in JSON Schema files are what the zod schemas generate today, and every one compiles.
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { buildJsonSchemas, serialiseJsonSchema } from './json-schemas.js';

const SCHEMAS_DIR = new URL('../schemas/', import.meta.url);
const REGENERATE = 'run `npm run schemas -w @agentmesh/protocol` and commit libs/protocol/schemas';

function checkedIn(): Map<string, string> {
  let files: string[] = [];
  try {
    files = readdirSync(SCHEMAS_DIR).filter((name) => name.endsWith('.json'));
  } catch {
    // No directory yet: every document counts as missing below.
  }
  return new Map(files.map((name) => [name, readFileSync(new URL(name, SCHEMAS_DIR), 'utf8')]));
}

describe('exported JSON Schemas', () => {
  const documents = buildJsonSchemas();
  const onDisk = checkedIn();

  it.each(Object.keys(documents))('schemas/%s is checked in and up to date', (fileName) => {
    const expected = serialiseJsonSchema(documents[fileName] ?? {});
    const actual = onDisk.get(fileName);
    if (actual === undefined) expect.fail(`schemas/${fileName} is missing: ${REGENERATE}`);
    if (actual !== expected) expect.fail(`schemas/${fileName} is stale: ${REGENERATE}`);
  });

  it('no checked-in schema file is left over from a payload that no longer exists', () => {
    const leftovers = [...onDisk.keys()].filter((name) => !(name in documents));
    if (leftovers.length > 0)
      expect.fail(`schemas/ has files no payload generates (${leftovers.join(', ')}): ${REGENERATE}`);
  });

  it.each(Object.entries(documents))('%s compiles with ajv (draft 2020-12)', (_fileName, document) => {
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    expect(() => ajv.compile(document)).not.toThrow();
  });

  it('the assembled task schema refuses a model key in clear, like the zod schema', () => {
    const schema = documents['assembled-task.json'] as {
      properties: {
        runtime_config: { properties: { model: { properties: object; additionalProperties: unknown } } };
      };
    };
    const model = schema.properties.runtime_config.properties.model;
    expect(Object.keys(model.properties)).not.toContain('api_key');
    expect(model.additionalProperties).toBe(false);
  });
});
