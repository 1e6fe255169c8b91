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
import { Worker } from 'node:worker_threads';
import { convertDocument, loadDocument } from '@agentmesh/openapi';
import { median, round } from './stats.js';
import { asSingleFileDocument } from './samchon-input.js';
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

/** Longest a samchon conversion may take before it is stopped and reported as "> cap". */
const SAMCHON_CAP_MS = Number(process.env.BENCH_CONVERTER_SAMCHON_CAP_MS ?? 60_000);

let samchonWorker: Worker | undefined;

/** What `samchon-worker.ts` answers. */
interface SamchonReply {
  ms: number;
  functions: number;
  /** The functions' `parameters` JSON, in characters (measured untimed). */
  outputChars: number;
  /** Functions with no parameter at all. */
  empty: number;
}

/** samchon's time for one conversion of `document` (mean of `repeats`), or undefined past the cap. */
async function samchonOnce(document: unknown, repeats: number): Promise<SamchonReply | undefined> {
  const worker = (samchonWorker ??= new Worker(new URL('./samchon-worker.ts', import.meta.url), {
    execArgv: ['--import', 'tsx'],
  }));
  let timer: NodeJS.Timeout | undefined;
  const reply = new Promise<SamchonReply | undefined>((resolve, reject) => {
    timer = setTimeout(() => resolve(undefined), SAMCHON_CAP_MS * repeats);
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  worker.postMessage({ document, repeats });
  try {
    const result = await reply;
    if (result === undefined) {
      // Still converting: stop it; the next document gets a fresh worker.
      samchonWorker = undefined;
      await worker.terminate();
    }
    return result;
  } finally {
    clearTimeout(timer);
    worker.removeAllListeners('message');
    worker.removeAllListeners('error');
  }
}

export interface ConverterRow {
  document: string;
  operations: number;
  /** Functions samchon's converter made (it leaves out operations it cannot convert). */
  samchon_functions: number;
  ours_ms: number;
  samchon_ms: number;
  /** samchon did not finish within the cap: samchon_ms is the cap, the ratio an upper bound. */
  samchon_capped: boolean;
  /** Median over runs of (ours ÷ samchon's) in the same run. */
  ratio: number;
  /** ours_ms ÷ samchon_ms of the medians. */
  ratio_of_medians: number;
  /** The largest function's `parameters` JSON, in KiB. */
  largest_tool_kib: number;
  /**
   * All functions' `parameters` JSON, ours and samchon's, in KiB, and how many functions have no
   * parameter: how much each converter made, so a row where samchon made far less (a ref it cannot
   * follow becomes an empty schema) is seen not to compare the same work.
   */
  ours_output_kib: number;
  samchon_output_kib: number | undefined;
  ours_empty_functions: number;
  samchon_empty_functions: number | undefined;
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
    // A bundled document as a single-file one for samchon, made untimed (samchon-input.ts): same work as ours.
    const samchonDocument = asSingleFileDocument(document);
    const samples: ConverterRow['runs'] = [];
    let operations = 0;
    let samchonFunctions = 0;
    let largest = 0;
    // Untimed conversions first (~100 ms' worth, at least one), so both run JIT-compiled code; the
    // last one also sizes the repeats.
    const first = convertDocument(document);
    let ourWarm = Infinity;
    let warmed = 0;
    for (const warmStart = performance.now(); performance.now() - warmStart < 100 && warmed < 500; warmed++) {
      const started = performance.now();
      convertDocument(document);
      ourWarm = performance.now() - started;
    }
    const samchonWarm = await samchonOnce(samchonDocument, Math.max(1, warmed));
    let ourOutput = 0;
    let ourEmpty = 0;
    for (const op of first.operations) {
      const chars = JSON.stringify(op.parameters).length;
      largest = Math.max(largest, chars);
      ourOutput += chars;
      if (Object.keys(op.parameters.properties).length === 0) ourEmpty += 1;
    }
    // A small document is converted several times per sample (both the same count), so a sample is
    // long enough for the clock and the noise of the machine: at least ~20 ms of the two together.
    const total = Math.min(ourWarm, 1e9) + (samchonWarm?.ms ?? SAMCHON_CAP_MS);
    const repeats = Math.max(1, Math.min(500, Math.ceil(20 / Math.max(0.01, total))));
    let capped = samchonWarm === undefined;
    for (let run = 0; run < runs; run++) {
      const sample = { ours_ms: 0, samchon_ms: SAMCHON_CAP_MS };
      // samchon runs in a worker (stoppable at the cap), ours here; alternate who goes first. Each
      // conversion gets its own fresh copy of the parsed document, made untimed, as samchon's does.
      const ours = (): void => {
        const inputs = Array.from({ length: repeats }, () => structuredClone(document));
        const started = performance.now();
        for (const input of inputs) operations = convertDocument(input).operations.length;
        sample.ours_ms = (performance.now() - started) / repeats;
      };
      const theirs = async (): Promise<void> => {
        if (capped) return;
        const result = await samchonOnce(samchonDocument, repeats);
        if (result === undefined) capped = true;
        else {
          sample.samchon_ms = result.ms;
          samchonFunctions = result.functions;
        }
      };
      if (run % 2 === 0) {
        ours();
        await theirs();
      } else {
        await theirs();
        ours();
      }
      samples.push(sample);
    }
    const ours = median(samples.map((s) => s.ours_ms));
    const samchon = median(samples.map((s) => s.samchon_ms));
    const ratio = median(samples.map((s) => s.ours_ms / s.samchon_ms));
    const synthetic = name.startsWith('synthetic');
    // Past the cap samchon's time is a lower bound (the cap), so the ratio is an upper bound.
    const pass = ratio <= RATIO_TARGET && (!synthetic || ours <= SYNTHETIC_TARGET_MS);
    process.stderr.write(`converter bench: ${name}: ours ${round(ours)} ms, samchon ${round(samchon)} ms\n`);
    rows.push({
      document: name,
      operations,
      samchon_functions: samchonFunctions,
      ours_ms: round(ours),
      samchon_ms: round(samchon),
      samchon_capped: capped,
      ratio: Math.round(ratio * 1000) / 1000,
      ratio_of_medians: round(ours / samchon),
      largest_tool_kib: round(largest / 1024),
      ours_output_kib: round(ourOutput / 1024),
      samchon_output_kib: samchonWarm ? round(samchonWarm.outputChars / 1024) : undefined,
      ours_empty_functions: ourEmpty,
      samchon_empty_functions: samchonWarm?.empty,
      target: `≤ ${RATIO_TARGET}×${synthetic ? ` and ≤ ${SYNTHETIC_TARGET_MS} ms` : ''}`,
      pass,
      runs: samples.map((s) => ({ ours_ms: round(s.ours_ms), samchon_ms: round(s.samchon_ms) })),
    });
  }
  await samchonWorker?.terminate();
  samchonWorker = undefined;
  return { runs, rows, markdown: renderConverter(rows, runs) };
}

export function renderConverter(rows: readonly ConverterRow[], runs: number): string {
  const lines = [
    `OpenAPI converter vs @samchon/openapi (HttpLlm.application), whole document, median of ${runs} runs; ` +
      "ratio = median of ours ÷ samchon in the same run. Output = all functions' `parameters` JSON in KiB, " +
      "ours / samchon's, and (in brackets) functions with no parameter: where samchon's is far smaller, it " +
      'did less work (refs it cannot follow become empty schemas) and the ratio does not compare like with like.',
    '',
    '| document | ops | samchon fns | ours ms | samchon ms | ratio | largest tool KiB | output KiB (empty fns), ours / samchon | target | result |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.document} | ${r.operations} | ${r.samchon_capped ? '—' : r.samchon_functions} | ${r.ours_ms} | ` +
        `${r.samchon_capped ? `> ${r.samchon_ms} (stopped)` : r.samchon_ms} | ${r.samchon_capped ? '< ' : ''}${r.ratio} | ` +
        `${r.largest_tool_kib} | ${r.ours_output_kib} (${r.ours_empty_functions}) / ` +
        `${r.samchon_output_kib === undefined ? '—' : `${r.samchon_output_kib} (${r.samchon_empty_functions})`} | ` +
        `${r.target} | ${r.pass ? 'pass' : '**FAIL**'} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
