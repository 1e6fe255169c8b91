// A long-lived script for ScriptRunner.start: answers each line on stdin with a JSON line saying what it
// got, its pid, whether it can see the host's /etc/hostname and which of the named variables it has.
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

for await (const line of createInterface({ input: process.stdin })) {
  const reply = {
    got: line,
    args: process.argv.slice(2),
    pid: process.pid,
    sees_host_files: existsSync('/etc/hostname'),
    session_secret_set: (process.env.SESSION_SECRET ?? '') !== '',
  };
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}
