// Converts every operation of every document in the shared OpenAPI corpus (real public APIs, see its
// MANIFEST.md) and checks each function a model would get. A per-document summary is checked in as
// corpus-summary.json; this test regenerates it and compares everything but timings
// (UPDATE_CORPUS_SUMMARY=1 writes it instead).

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { convertDocument } from './document-converter.js';
import { loadDocument } from './load-document.js';
import { NoteCode } from './notes.js';
import { schemaProblems, strictProblems } from './__fixtures__/schema-check.js';

const CORPUS_DIR = fileURLToPath(new URL('../../../../shared/openapi-corpus/', import.meta.url));
const SUMMARY_FILE = fileURLToPath(new URL('../corpus-summary.json', import.meta.url));
const UPDATE = process.env.UPDATE_CORPUS_SUMMARY === '1';

// File, and the operation count MANIFEST.md gives for it.
const DOCUMENTS: ReadonlyArray<readonly [string, number]> = [
  ['petstore-oai.yaml', 3],
  ['petstore-expanded-oai.yaml', 4],
  ['petstore3-swagger-api.yaml', 19],
  ['twilio_api_v2010.yaml', 197],
  ['discord-openapi.json', 242],
  ['asana_oas.yaml', 247],
  ['jira-cloud-platform-swagger-v3.v3.json', 616],
  ['github-api.github.com-2021.yaml', 814],
  ['stripe-spec3.yaml', 468],
  ['digitalocean/specification/DigitalOcean-public.v2.yaml', 659],
];

interface DocumentSummary {
  operations: number;
  converted: number;
  failures: Record<string, number>;
  collisionsHandled: number;
  notes: number;
  notesByCode: Record<string, number>;
  strictConverted: number;
  timeMs: number;
}

const present = existsSync(CORPUS_DIR);

describe.skipIf(!present)(
  `the OpenAPI corpus${present ? '' : ` (skipped: no corpus at ${CORPUS_DIR})`}`,
  () => {
    const summaries: Record<string, DocumentSummary> = {};

    for (const [file, manifestOperations] of DOCUMENTS) {
      it(`converts every operation of ${file} into a valid, $ref-free function with a legal unique name`, async () => {
        const { document } = await loadDocument(`${CORPUS_DIR}${file}`);
        const started = performance.now();
        const conversion = convertDocument(document);
        const strict = convertDocument(document, { strict: true });
        const timeMs = Math.round(performance.now() - started);

        const total = conversion.operations.length + conversion.failures.length;
        expect(total, 'operation count from MANIFEST.md').toBe(manifestOperations);
        expect(conversion.failures).toEqual([]);
        expect(strict.failures).toEqual([]);

        const problems = [...conversion.operations, ...strict.operations].flatMap((operation) =>
          schemaProblems(operation.name, operation.parameters).map(
            (problem) => `${operation.name}: ${problem}`,
          ),
        );
        expect(problems).toEqual([]);
        const strictShape = strict.operations.flatMap((operation) =>
          strictProblems(operation.parameters).map((problem) => `${operation.name}: ${problem}`),
        );
        expect(strictShape.slice(0, 10)).toEqual([]);

        const names = conversion.operations.map((operation) => operation.name.toLowerCase());
        expect(new Set(names).size).toBe(names.length);

        const notesByCode: Record<string, number> = {};
        for (const note of conversion.operations.flatMap((operation) => operation.notes)) {
          notesByCode[note.code] = (notesByCode[note.code] ?? 0) + 1;
        }
        const failures: Record<string, number> = {};
        for (const failure of conversion.failures)
          failures[failure.reason] = (failures[failure.reason] ?? 0) + 1;
        summaries[file] = {
          operations: total,
          converted: conversion.operations.length,
          failures,
          collisionsHandled: notesByCode[NoteCode.NAME_COLLISION] ?? 0,
          notes: Object.values(notesByCode).reduce((sum, count) => sum + count, 0),
          notesByCode: Object.fromEntries(Object.entries(notesByCode).sort(([a], [b]) => a.localeCompare(b))),
          strictConverted: strict.operations.length,
          timeMs,
        };
      }, 300_000);
    }

    it('matches the checked-in corpus-summary.json (timings aside)', () => {
      expect(Object.keys(summaries), 'every document was converted above').toHaveLength(DOCUMENTS.length);
      const totals = Object.values(summaries).reduce(
        (sum, doc) => ({
          operations: sum.operations + doc.operations,
          converted: sum.converted + doc.converted,
          failures: sum.failures + Object.values(doc.failures).reduce((a, b) => a + b, 0),
          collisionsHandled: sum.collisionsHandled + doc.collisionsHandled,
          notes: sum.notes + doc.notes,
          strictConverted: sum.strictConverted + doc.strictConverted,
          timeMs: sum.timeMs + doc.timeMs,
        }),
        {
          operations: 0,
          converted: 0,
          failures: 0,
          collisionsHandled: 0,
          notes: 0,
          strictConverted: 0,
          timeMs: 0,
        },
      );
      const summary = { documents: summaries, totals };
      if (UPDATE || !existsSync(SUMMARY_FILE)) {
        writeFileSync(SUMMARY_FILE, `${JSON.stringify(summary, null, 2)}\n`);
        if (!UPDATE)
          throw new Error(`${SUMMARY_FILE} did not exist; it was written now — review and check it in`);
        return;
      }
      const checkedIn = JSON.parse(readFileSync(SUMMARY_FILE, 'utf8')) as typeof summary;
      expect(withoutTimings(summary)).toEqual(withoutTimings(checkedIn));
    });
  },
);

function withoutTimings(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'timeMs' ? undefined : v)));
}
