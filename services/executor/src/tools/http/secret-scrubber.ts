// The scrubber the tool runners clean their answers and errors with; it lives with the executor's other
// secret handling in src/secrets/.
export { SecretScrubber } from '../../secrets/secret-scrubber.js';
