// Multi-file documents: relative $refs bundled from disk into one self-contained document.

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleDocument } from './bundle.js';
import { convertDocument } from './document-converter.js';
import {
  DocumentParseError,
  DocumentTooDeepError,
  EmptyDocumentError,
  InvalidDocumentError,
} from './errors.js';
import { MAX_DOCUMENT_DEPTH } from './parse-document.js';
import { loadDocument } from './load-document.js';
import { listReferences } from './ref-walker.js';
import { schemaProblems } from './__fixtures__/schema-check.js';

let dir: string;
let outside: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-bundle-'));
  outside = await mkdtemp(join(tmpdir(), 'openapi-outside-'));
  await mkdir(join(dir, 'resources', 'pets', 'models'), { recursive: true });
  await writeFile(join(outside, 'secret.yml'), 'type: string\n');
  await writeFile(
    join(dir, 'api.yaml'),
    [
      'openapi: 3.0.0',
      'info: {title: Pets, version: "1"}',
      'paths:',
      '  /pets/{id}:',
      '    put:',
      '      $ref: "resources/pets/pets_update.yml"',
      '  /leak:',
      '    get:',
      '      operationId: leak',
      '      parameters:',
      '        - {name: a, in: query, schema: {$ref: "../' + outside.split('/').at(-1) + '/secret.yml"}}',
      '        - {name: b, in: query, schema: {$ref: "resources/escape.yml"}}',
      'components:',
      '  schemas:',
      '    Id: {type: string, description: An id.}',
    ].join('\n'),
  );
  await symlink(join(outside, 'secret.yml'), join(dir, 'resources', 'escape.yml'));
  await writeFile(
    join(dir, 'resources', 'pets', 'pets_update.yml'),
    [
      'operationId: pets_update',
      'parameters:',
      '  - $ref: "parameters.yml#/pet_id"',
      'requestBody:',
      '  content:',
      '    application/json:',
      '      schema:',
      '        $ref: "models/pet.yml"',
      '      examples:',
      '        sample:',
      '          $ref: "examples.yml#/pet_example"',
    ].join('\n'),
  );
  await writeFile(
    join(dir, 'resources', 'pets', 'parameters.yml'),
    'pet_id:\n  name: id\n  in: path\n  required: true\n  schema:\n    $ref: "../../api.yaml#/components/schemas/Id"\n',
  );
  await writeFile(
    join(dir, 'resources', 'pets', 'models', 'pet.yml'),
    'type: object\nproperties:\n  id: {type: string}\n  name: {type: string}\n  parent: {$ref: "#"}\n  tags:\n    $ref: "#/definitions_local/tags"\ndefinitions_local:\n  tags: {type: array, items: {type: string}}\n',
  );
  await writeFile(
    join(dir, 'resources', 'pets', 'examples.yml'),
    'pet_example:\n  value:\n    name: Rex\n    link: {$ref: "not/a/file.yml"}\n',
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe('loadDocument', () => {
  it('when a document spreads over files (DigitalOcean style), it is bundled and converts with no $ref left but into its own $defs', async () => {
    const { document, files, notes } = await loadDocument(join(dir, 'api.yaml'));
    expect(files.sort()).toEqual([
      'resources/pets/examples.yml',
      'resources/pets/models/pet.yml',
      'resources/pets/parameters.yml',
      'resources/pets/pets_update.yml',
    ]);
    // Only the two references that leave the folder are refused (one through a symlink).
    expect(notes.map((note) => note.message)).toEqual([
      expect.stringMatching(/could not be loaded: .*is outside the document's folder/),
      expect.stringMatching(/could not be loaded: .*is outside the document's folder/),
    ]);
    const { operations, failures } = convertDocument(document);
    expect(failures).toEqual([]);
    const update = operations.find((o) => o.name === 'pets_update');
    expect(update?.parameters.properties).toMatchObject({
      id: { type: 'string', description: 'An id.' },
      body_id: { type: 'string' },
      name: { type: 'string' },
      parent: { $ref: '#/$defs/pet.yml' },
      tags: { type: 'array', items: { type: 'string' } },
    });
    // `parent: {$ref: "#"}` in pet.yml is pet.yml itself: kept exact under `$defs`.
    expect(update?.parameters.$defs?.['pet.yml']?.properties?.parent).toEqual({ $ref: '#/$defs/pet.yml' });
    for (const operation of operations)
      expect(schemaProblems(operation.name, operation.parameters)).toEqual([]);
    const leak = operations.find((o) => o.name === 'leak');
    expect(leak?.parameters.properties.a?.description).toMatch(/^Unresolved reference/);
  });

  it('when an example file holds "$ref" keys in its value, they stay data and are not followed', async () => {
    const { document } = await loadDocument(join(dir, 'api.yaml'));
    const refs = listReferences(document);
    expect(refs).not.toContain('not/a/file.yml');
    expect(JSON.stringify(document)).toContain('"link":{"$ref":"not/a/file.yml"}');
  });

  it('when the entry file does not exist or is not JSON/YAML, a coded parse error says so', async () => {
    await expect(loadDocument(join(dir, 'missing.yaml'))).rejects.toThrow(DocumentParseError);
    await writeFile(join(dir, 'broken.yaml'), 'a: [unclosed\n');
    await expect(loadDocument(join(dir, 'broken.yaml'))).rejects.toMatchObject({
      code: 'SCHEMA_CONVERSION_ERROR',
    });
  });

  it('when the entry file is empty or holds only a comment, a coded EmptyDocumentError says so (no TypeError)', async () => {
    await writeFile(join(dir, 'empty.yaml'), '');
    await writeFile(join(dir, 'comment.yaml'), '# nothing here\n');
    for (const file of ['empty.yaml', 'comment.yaml']) {
      const failure = loadDocument(join(dir, file));
      await expect(failure).rejects.toThrow(EmptyDocumentError);
      await expect(failure).rejects.toMatchObject({ code: 'SCHEMA_CONVERSION_ERROR', retryable: false });
    }
  });

  it('when the entry file is a scalar or a list, a coded InvalidDocumentError says it is not an object', async () => {
    await writeFile(join(dir, 'scalar.yaml'), 'just text\n');
    await expect(loadDocument(join(dir, 'scalar.yaml'))).rejects.toThrow(InvalidDocumentError);
  });

  it('when a schema nests 5,000 levels deep (JSON or YAML), a coded DocumentTooDeepError says so (no RangeError)', async () => {
    let schema = '{"type":"string"}';
    for (let i = 0; i < 5000; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    await writeFile(
      join(dir, 'deep.json'),
      `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{},"components":{"schemas":{"D":${schema}}}}`,
    );
    const lines = [
      'openapi: 3.0.0',
      'info: {title: t, version: "1"}',
      'paths: {}',
      'components:',
      '  schemas:',
      '    D:',
    ];
    for (let i = 0, indent = '      '; i < 5000; i++, indent += '    ') {
      lines.push(`${indent}properties:`, `${indent}  a:`);
    }
    await writeFile(join(dir, 'deep.yaml'), `${lines.join('\n')}\n`);
    for (const file of ['deep.json', 'deep.yaml']) {
      const failure = loadDocument(join(dir, file));
      await expect(failure).rejects.toThrow(DocumentTooDeepError);
      await expect(failure).rejects.toMatchObject({
        code: 'SCHEMA_CONVERSION_ERROR',
        detail: { maxDepth: MAX_DOCUMENT_DEPTH },
      });
    }
  });

  it('when a schema nests deeply but within the limit, the document loads and converts with a depth note', async () => {
    let schema = '{"type":"string"}';
    for (let i = 0; i < 400; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    await writeFile(
      join(dir, 'deepish.json'),
      `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/x":{"post":{"operationId":"x","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/D"}}}}}}},"components":{"schemas":{"D":${schema}}}}`,
    );
    const { document } = await loadDocument(join(dir, 'deepish.json'));
    const [operation] = convertDocument(document).operations;
    expect(operation?.notes.map((note) => note.code)).toContain('depth_limit');
  });
});

describe('bundleDocument', () => {
  it('when given any loader (not only files), external refs are bundled through it and each file is loaded once', async () => {
    const loads: string[] = [];
    const files: Record<string, unknown> = {
      'https://specs.example.com/models.json': {
        Pet: { type: 'object', properties: { owner: { $ref: '#/Owner' } } },
        Owner: { type: 'string' },
      },
    };
    const root = {
      openapi: '3.1.0',
      paths: {
        '/a': {
          post: {
            operationId: 'a',
            requestBody: { content: { 'application/json': { schema: { $ref: 'models.json#/Pet' } } } },
          },
        },
        '/b': {
          post: {
            operationId: 'b',
            requestBody: { content: { 'application/json': { schema: { $ref: './models.json#/Pet' } } } },
          },
        },
      },
    };
    const { document, notes } = await bundleDocument(root, {
      baseUri: 'https://specs.example.com/openapi.json',
      load: (uri) => {
        loads.push(uri);
        return files[uri];
      },
    });
    expect(notes).toEqual([]);
    expect(loads).toEqual(['https://specs.example.com/models.json']);
    expect(root.paths['/a'].post.requestBody.content['application/json'].schema.$ref).toBe(
      'models.json#/Pet',
    );
    const { operations } = convertDocument(document);
    expect(operations.map((o) => o.parameters.properties)).toEqual([
      { owner: { type: 'string' } },
      { owner: { type: 'string' } },
    ]);
  });
});
