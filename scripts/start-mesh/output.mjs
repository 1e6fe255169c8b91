// What npm start prints about itself: `[mesh] …` lines on stdout, and StartError, a condition the user
// can fix (a port in use, no NATS, no Node to fetch), printed as one paragraph without a stack trace.

export function say(message) {
  process.stdout.write(`[mesh] ${message}\n`);
}

/** A reason npm start cannot go on that the user can act on; its message is the whole explanation. */
export class StartError extends Error {
  name = 'StartError';
}

/** The message of anything thrown, without a stack: what a user of npm start reads. */
export function describeError(error) {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

export function sayError(error) {
  process.stderr.write(`[mesh] error: ${describeError(error)}\n`);
}
