// Echoes its input back, with what it can see of its own situation.
import process from 'node:process';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const data = JSON.parse(text);
process.stdout.write(
  JSON.stringify({ echo: data, language: 'nodejs', cwd: process.cwd(), uid: process.getuid() }),
);
