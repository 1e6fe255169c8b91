/**
 * The OpenAPI converter against `@samchon/openapi`'s (`HttpLlm.application`, the reference converter of
 * issue 27): each real document of the shared corpus and a 20,000-operation synthetic one is loaded and
 * parsed once, then converted whole by both, alternating, `runs` times. Per document: the medians of both,
 * the median of the ratios measured in the same run (robust on a noisy machine), and the targets — ours
 * ≤ 0.5 × samchon's, and the synthetic document ≤ 2.5 s. It measures and reports; it asserts nothing.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { HttpLlm } from '@samchon/openapi';
import { convertDocument, loadDocument } from '@agentmesh/openapi';
import { median, round } from './stats.js';
import { syntheticOpenApi } from './synthetic-openapi.js';

const CORPUS = fileURLToPath(new URL('../../../../../shared/openapi-corpus/', import.meta.url));
const DOCUMENTS = [
  'petstore-oai.yaml',
  'petstore-expanded-oai.yaml',
  'petstore3-swagger-api.yaml',
  'twilio_api_v2010.yaml',
  'discord-openapi.json',
  'asana_oas.yaml',
  'jira-cloud-platform-swagger-v3.v3.json',
  'github-api.github.com-2021.yaml',
  'stripe-spec3.yaml',
  'digitalocean/specification/DigitalOcean-public.v2.yaml',
];
export const SYNTHETIC_OPERATIONS = 20_000;
/** Ours ÷ samchon's, at most. */
export const RATIO_TARGET = 0.5;
/** The synthetic document, at most. */
export const SYNTHETIC_TARGET_MS = 2500;

export interface ConverterRow {
  document: string;
  operations: number;
  /** Functions samchon's converter made (it leaves out operations it cannot convert). */
  samchon_functions: number;
  ours_ms: number;
  samchon_ms: number;
  /** Median over runs of (ours ÷ samchon's) in the same run. */
  ratio: number;
  /** ours_ms ÷ samchon_ms of the medians. */
  ratio_of_medians: number;
  /** The largest function's `parameters` JSON, in KiB. */
  largest_tool_kib: number;
  target: string;
  pass: boolean;
  runs: { ours_ms: number; samchon_ms: number }[];
}

export interface ConverterBench {
  runs: number;
  rows: ConverterRow[];
  markdown: string;
}

export async function benchConverter(runs = 5): Promise<ConverterBench | undefined> {
  if (!existsSync(CORPUS)) return undefined;
  const documents: { name: string; document: Record<string, unknown> }[] = [];
  for (const file of DOCUMENTS) {
    documents.push({
      name: file.split('/').at(-1)!,
      document: (await loadDocument(`${CORPUS}${file}`)).document,
    });
  }
  documents.push({
    name: `synthetic ${SYNTHETIC_OPERATIONS.toLocaleString('en')} ops`,
    document: syntheticOpenApi(SYNTHETIC_OPERATIONS),
  });
  const rows: ConverterRow[] = [];
  for (const { name, document } of documents) {
    const samples: ConverterRow['runs'] = [];
    let operations = 0;
    let samchonFunctions = 0;
    let largest = 0;
    // One untimed conversion each first, so both run JIT-compiled code.
    const first = convertDocument(document);
    HttpLlm.application({ document: structuredClone(document) as never });
    for (const op of first.operations) largest = Math.max(largest, JSON.stringify(op.parameters).length);
    for (let run = 0; run < runs; run++) {
      const input = structuredClone(document);
      const sample = { ours_ms: 0, samchon_ms: 0 };
      // Alternate who goes first, so neither always meets a freshly collected heap.
      const order = run % 2 === 0 ? ['ours', 'samchon'] : ['samchon', 'ours'];
      for (const who of order) {
        const started = performance.now();
        if (who === 'ours') operations = convertDocument(document).operations.length;
        else samchonFunctions = HttpLlm.application({ document: input as never }).functions.length;
        const ms = performance.now() - started;
        if (who === 'ours') sample.ours_ms = ms;
        else sample.samchon_ms = ms;
      }
      samples.push(sample);
    }
    const ours = median(samples.map((s) => s.ours_ms));
    const samchon = median(samples.map((s) => s.samchon_ms));
    const ratio = median(samples.map((s) => s.ours_ms / s.samchon_ms));
    const synthetic = name.startsWith('synthetic');
    const pass = ratio <= RATIO_TARGET && (!synthetic || ours <= SYNTHETIC_TARGET_MS);
    process.stderr.write(`converter bench: ${name}: ours ${round(ours)} ms, samchon ${round(samchon)} ms\n`);
    rows.push({
      document: name,
      operations,
      samchon_functions: samchonFunctions,
      ours_ms: round(ours),
      samchon_ms: round(samchon),
      ratio: round(ratio),
      ratio_of_medians: round(ours / samchon),
      largest_tool_kib: round(largest / 1024),
      target: `≤ ${RATIO_TARGET}×${synthetic ? ` and ≤ ${SYNTHETIC_TARGET_MS} ms` : ''}`,
      pass,
      runs: samples.map((s) => ({ ours_ms: round(s.ours_ms), samchon_ms: round(s.samchon_ms) })),
    });
  }
  return { runs, rows, markdown: renderConverter(rows, runs) };
}

export function renderConverter(rows: readonly ConverterRow[], runs: number): string {
  const lines = [
    `OpenAPI converter vs @samchon/openapi (HttpLlm.application), whole document, median of ${runs} runs; ` +
      'ratio = median of ours ÷ samchon in the same run.',
    '',
    '| document | ops | samchon fns | ours ms | samchon ms | ratio | largest tool KiB | target | result |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.document} | ${r.operations} | ${r.samchon_functions} | ${r.ours_ms} | ${r.samchon_ms} | ${r.ratio} | ` +
        `${r.largest_tool_kib} | ${r.target} | ${r.pass ? 'pass' : '**FAIL**'} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
