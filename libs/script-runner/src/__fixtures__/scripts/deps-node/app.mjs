// Uses mesh-local-dep, installed into this script's own node_modules from package.json.
import process from 'node:process';
import { greet } from 'mesh-local-dep';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const data = JSON.parse(text);
process.stdout.write(JSON.stringify({ greeting: greet(data.name) }));
