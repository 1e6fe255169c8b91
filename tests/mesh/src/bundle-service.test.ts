/**
 * scripts/bundle-service.mjs on a small package of its own (no service, no NATS): what a bundle must
 * carry besides code — files and folders a module opens next to itself, the package's asset folders,
 * its package.json — and that a reference it cannot carry fails the bundle instead of the service.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../../scripts/bundle-service.mjs', import.meta.url));

let work: string;
let pkg: string;

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'bundle-service-'));
  pkg = join(work, 'pkg');
  await mkdir(join(pkg, 'dist'), { recursive: true });
  await mkdir(join(pkg, 'data'));
  await mkdir(join(pkg, 'static'));
  await mkdir(join(pkg, 'console'));
  await writeFile(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: '@fixture/svc',
      version: '1.2.3',
      type: 'module',
      bundle: { entries: { index: 'dist/index.js' }, assets: ['console', 'public'] },
    }),
  );
  await writeFile(join(pkg, 'data', 'greeting.txt'), 'hello from a file');
  await writeFile(join(pkg, 'static', 'site.css'), 'body {}');
  await writeFile(join(pkg, 'console', 'index.html'), '<h1>console</h1>');
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function entry(code: string): Promise<void> {
  await writeFile(join(pkg, 'dist', 'index.js'), code);
}

function bundle(out: string) {
  return spawnSync(process.execPath, [script, out], { cwd: pkg, encoding: 'utf8' });
}

describe('bundle-service', () => {
  it('a bundled module still reads the file and the folder it opens next to itself, and its package.json, with the package gone', async () => {
    await entry(
      [
        "import { readFileSync, readdirSync } from 'node:fs';",
        "import { createRequire } from 'node:module';",
        "const greeting = readFileSync(new URL('../data/greeting.txt', import.meta.url), 'utf8');",
        "const styles = readdirSync(new URL('../static/', import.meta.url));",
        "const { version } = createRequire(import.meta.url)('../package.json');",
        'console.log(JSON.stringify({ greeting, styles, version }));',
      ].join('\n'),
    );
    const out = join(work, 'out');
    const built = bundle(out);
    expect(built.status, built.stderr).toBe(0);
    await rm(pkg, { recursive: true });

    const run = spawnSync(process.execPath, [join(out, 'dist', 'index.mjs')], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      greeting: 'hello from a file',
      styles: ['site.css'],
      version: '1.2.3',
    });
    expect(existsSync(join(out, 'assets', '@fixture', 'svc', 'data', 'greeting.txt'))).toBe(true);
  });

  it('the asset folders the bundle field names are copied when present, and a missing one is skipped', async () => {
    await entry("console.log('ok');");
    const out = join(work, 'out');
    const built = bundle(out);
    expect(built.status, built.stderr).toBe(0);
    expect(existsSync(join(out, 'console', 'index.html'))).toBe(true);
    expect(existsSync(join(out, 'public'))).toBe(false);
  });

  it('a reference to a file that does not exist fails the bundle, naming it', async () => {
    await entry(
      "import { readFileSync } from 'node:fs';\nreadFileSync(new URL('../data/missing.txt', import.meta.url));",
    );
    const built = bundle(join(work, 'out'));
    expect(built.status).not.toBe(0);
    expect(built.stderr).toContain('../data/missing.txt');
    expect(built.stderr).toContain('does not exist');
  });

  it('a reference leaving its package fails the bundle', async () => {
    await writeFile(join(work, 'outside.txt'), 'not ours');
    await entry(
      "import { readFileSync } from 'node:fs';\nreadFileSync(new URL('../../outside.txt', import.meta.url));",
    );
    const built = bundle(join(work, 'out'));
    expect(built.status).not.toBe(0);
    expect(built.stderr).toContain('is not a file or folder inside @fixture/svc');
  });

  it('a relative file the output still refers to without carrying it fails the bundle', async () => {
    // Computed at run time, so the relocation cannot see it; the check of the output does.
    await entry(
      "import { createRequire } from 'node:module';\nconsole.log(createRequire(import.meta.url)('../config/settings.json'));",
    );
    const built = bundle(join(work, 'out'));
    expect(built.status).not.toBe(0);
    expect(built.stderr).toContain('refers to files it does not carry');
    expect(built.stderr).toContain('../config/settings.json');
  });
});
