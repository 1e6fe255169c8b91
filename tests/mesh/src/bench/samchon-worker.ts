/**
 * Runs `@samchon/openapi`'s converter in a worker thread for the converter bench, so that a document it
 * takes minutes over (Stripe) can be stopped at a cap instead of stalling the bench. One worker serves a
 * whole bench (its code stays JIT-compiled, as ours does in the main thread): each message is
 * `{document, repeats}`, each reply the mean time of one conversion and the functions made.
 */
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { HttpLlm } from '@samchon/openapi';

parentPort!.on('message', ({ document, repeats }: { document: unknown; repeats: number }) => {
  const inputs = Array.from({ length: repeats }, () => structuredClone(document));
  const started = performance.now();
  let functions = 0;
  for (const input of inputs) functions = HttpLlm.application({ document: input as never }).functions.length;
  parentPort!.postMessage({ ms: (performance.now() - started) / repeats, functions });
});
