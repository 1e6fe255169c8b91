#!/usr/bin/env node
// Fails when a workspace package declares a dependency (runtime or dev; `@types/` aside) that none of its
// sources or root config files names: a
// dependency nothing uses still costs installs, audits and readers' attention. A dependency counts as
// used when a source file names it in quotes, alone or with a subpath ('pkg' or 'pkg/sub'), which
// covers imports, dynamic imports and names handed to `--import` or a loader.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const SOURCE = /\.(ts|tsx|mts|js|mjs|cjs)$/;

function sourcesOf(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === 'node_modules' || name === 'dist' ? [] : sourcesOf(path);
    return SOURCE.test(name) ? [path] : [];
  });
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const unused = [];
for (const group of ['libs', 'services', 'tests']) {
  for (const name of readdirSync(join(root, group))) {
    const dir = join(root, group, name);
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const {
      name: packageName,
      dependencies = {},
      devDependencies = {},
    } = JSON.parse(readFileSync(manifest, 'utf8'));
    const rootFiles = readdirSync(dir)
      .filter((name) => SOURCE.test(name))
      .map((name) => join(dir, name));
    const text = sourcesOf(join(dir, 'src'))
      .concat(sourcesOf(join(dir, 'scripts')), rootFiles)
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    // Type packages are used by the compiler, not named by sources; a workspace package as a dev
    // dependency orders the build (tests that start a service as a process need it built first).
    const declared = [
      ...Object.keys(dependencies),
      ...Object.keys(devDependencies).filter((dependency) => !dependency.startsWith('@agentmesh/')),
    ].filter((dependency) => !dependency.startsWith('@types/'));
    for (const dependency of declared) {
      if (!new RegExp(`['"\`]${escape(dependency)}(/[^'"\`]*)?['"\`]`).test(text)) {
        unused.push(`${packageName}: ${dependency}`);
      }
    }
  }
}
if (unused.length > 0) {
  process.stderr.write(
    `dependencies no source names (remove them from package.json):\n  ${unused.join('\n  ')}\n`,
  );
  process.exitCode = 1;
}
