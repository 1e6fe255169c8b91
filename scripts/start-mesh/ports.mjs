// The ports npm start will listen on, checked before it starts anything: a port in use (a mesh left
// from an earlier run, another program) is one clear error naming the port and the variable that moves
// it, never a run that half-starts or talks to the old mesh.
import { createServer } from 'node:net';
import { StartError } from './output.mjs';

/** A port npm start is about to listen on; `variable` is the environment variable that sets it. */
export function portClaim(variable, fallback, host, what) {
  const raw = process.env[variable] ?? (fallback === undefined ? undefined : String(fallback));
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new StartError(`${variable}=${raw} is not a port number (1-65535)`);
  }
  return { variable, port, host, what };
}

function probe({ port, host }) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error) => resolve(error.code ?? error.message));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** Throws StartError naming every claimed port something else already holds. */
export async function assertPortsFree(claims) {
  const problems = [];
  for (const claim of claims.filter(Boolean)) {
    const error = await probe(claim);
    if (error === undefined) continue;
    const where = `${claim.host}:${claim.port}`;
    problems.push(
      error === 'EADDRINUSE'
        ? `port ${claim.port} (${claim.what}, ${where}) is in use: another program, or a mesh left from an ` +
            `earlier run, holds it (\`ss -ltnp 'sport = :${claim.port}'\` shows which). Stop it, or set ` +
            `${claim.variable} to a free port.`
        : `cannot listen on ${where} (${claim.what}): ${error}. Set ${claim.variable} to another port.`,
    );
  }
  if (problems.length > 0) throw new StartError(problems.join('\n[mesh] error: '));
}

/** A port nothing listens on now (the kernel's pick), for a listener started soon after. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
