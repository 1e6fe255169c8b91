/**
 * Runs `@samchon/openapi`'s converter in a worker thread for the converter bench, so that a document it
 * takes minutes over (Stripe) can be stopped at a cap instead of stalling the bench. One worker serves a
 * whole bench (its code stays JIT-compiled, as ours does in the main thread): each message is
 * `{document, repeats}`, each reply the mean time of one conversion, the functions made, and (measured
 * after the timing) how much it made: the functions' `parameters` JSON in all and how many have no
 * parameter at all, so the bench can show when samchon did less work than ours (a ref it cannot follow
 * leaves an empty schema).
 */
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { HttpLlm } from '@samchon/openapi';

parentPort!.on('message', ({ document, repeats }: { document: unknown; repeats: number }) => {
  const inputs = Array.from({ length: repeats }, () => structuredClone(document));
  const started = performance.now();
  let last: ReturnType<typeof HttpLlm.application> | undefined;
  for (const input of inputs) last = HttpLlm.application({ document: input as never });
  const ms = (performance.now() - started) / repeats;
  const made = last?.functions ?? [];
  let outputChars = 0;
  let empty = 0;
  for (const fn of made) {
    outputChars += JSON.stringify(fn.parameters ?? {}).length;
    if (Object.keys(fn.parameters?.properties ?? {}).length === 0) empty += 1;
  }
  parentPort!.postMessage({ ms, functions: made.length, outputChars, empty });
});
