/**
 * Conversion throughput of the OpenAPI converter over the shared corpus (operations per second):
 * documents are loaded and parsed once, then every operation of every document is converted, three
 * times; the median pass is reported.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { convertDocument, loadDocument } from '@agentmesh/openapi';
import { round } from './stats.js';

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

export interface ConversionBench {
  operations: number;
  ops_per_s: number;
  pass_ms: number;
}

export async function benchConversion(): Promise<ConversionBench | undefined> {
  if (!existsSync(CORPUS)) return undefined;
  const documents = await Promise.all(
    DOCUMENTS.map(async (file) => (await loadDocument(`${CORPUS}${file}`)).document),
  );
  const passes: { ms: number; operations: number }[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const started = performance.now();
    let operations = 0;
    for (const document of documents) operations += convertDocument(document).operations.length;
    passes.push({ ms: performance.now() - started, operations });
  }
  passes.sort((a, b) => a.ms - b.ms);
  const median = passes[1]!;
  return {
    operations: median.operations,
    ops_per_s: round(median.operations / (median.ms / 1000)),
    pass_ms: round(median.ms),
  };
}
