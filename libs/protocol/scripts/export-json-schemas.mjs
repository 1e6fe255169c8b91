// Writes the JSON Schema documents of the public payloads to libs/protocol/schemas/ (run after a build:
// `npm run schemas -w @agentmesh/protocol`). Files no payload generates any more are removed.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import process from 'node:process';
import { buildJsonSchemas, serialiseJsonSchema } from '../dist/index.js';

const outDir = new URL('../schemas/', import.meta.url);
const documents = buildJsonSchemas();

mkdirSync(outDir, { recursive: true });
for (const stale of readdirSync(outDir).filter((name) => name.endsWith('.json') && !(name in documents))) {
  rmSync(new URL(stale, outDir));
}
for (const [fileName, document] of Object.entries(documents)) {
  writeFileSync(new URL(fileName, outDir), serialiseJsonSchema(document));
}
process.stdout.write(`wrote ${Object.keys(documents).length} JSON Schema files to libs/protocol/schemas/\n`);
