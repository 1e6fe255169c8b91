#!/usr/bin/env node
// Production build of one service: its compiled entry points (dist/, so `npm run build` first) and
// everything they import, workspace libraries and npm packages alike, bundled by esbuild into ES
// modules that run with plain `node` and no node_modules. Run from the service's folder
// (`npm run bundle`); the service's package.json says what to bundle:
//   "bundle": {
//     "entries": { "index": "dist/index.js", "provision": "dist/provision.js" },  // name → module
//     "assets": ["public"]                                                       // copied when present
//   }
// Output, in `bundle/` (or the folder given as the first argument), laid out like a package so that
// paths a module computes from its own location (`../package.json` from dist/) still resolve:
//   package.json        name, version, "type": "module"; no dependencies
//   dist/<name>.mjs     one per entry (`node dist/index.mjs`), plus shared chunks and source maps
//   assets/<package>/<path>  files our modules open by `new URL('<relative>', import.meta.url)` (the
//                       script runner's sandbox init, ...), moved here and the reference rewritten
//   <asset>             each asset folder/file of the package that exists (a console's static files)
// Afterwards every relative `new URL(…, import.meta.url)` and `createRequire(import.meta.url)(…)` left in
// the output is checked to resolve inside the bundle, so a file the bundle would miss at run time fails
// the build rather than the service.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const serviceDir = process.cwd();
const manifest = JSON.parse(readFileSync(join(serviceDir, 'package.json'), 'utf8'));
const spec = manifest.bundle;
if (!spec?.entries || Object.keys(spec.entries).length === 0) {
  process.stderr.write(`${manifest.name}: package.json has no "bundle": { "entries": … }\n`);
  process.exit(1);
}
const outDir = resolve(process.argv[2] ?? join(serviceDir, 'bundle'));
const codeDir = join(outDir, 'dist');

// CommonJS packages inside an ES module bundle still call require() for Node's built-ins and read
// __dirname/__filename; these give them the bundle file's own.
const banner = [
  "import { createRequire as __bundleCreateRequire } from 'node:module';",
  "import { fileURLToPath as __bundleFileURLToPath } from 'node:url';",
  "import { dirname as __bundleDirname } from 'node:path';",
  'const require = __bundleCreateRequire(import.meta.url);',
  'const __filename = __bundleFileURLToPath(import.meta.url);',
  'const __dirname = __bundleDirname(__filename);',
].join('\n');

const FILE_REFERENCE = /new URL\(\s*(['"`])(\.\.?\/[^'"`]+)\1\s*,\s*import\.meta\.url\s*\)/g;

/** The folder of the package.json nearest above `file`, and that package's name. */
function owningPackage(file) {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    const manifestPath = join(dir, 'package.json');
    if (existsSync(manifestPath)) return { dir, name: JSON.parse(readFileSync(manifestPath, 'utf8')).name };
  }
  throw new Error(`${file} belongs to no package`);
}

/**
 * Moves the files our own modules open relative to themselves into assets/<package name>/<path in the
 * package> and points the code there. A reference must stay inside its module's package.
 */
const relocateFileReferences = {
  name: 'relocate-file-references',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.m?js$/ }, (args) => {
      if (args.path.split(sep).includes('node_modules')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const owner = owningPackage(args.path);
      const errors = [];
      const contents = source.replace(FILE_REFERENCE, (whole, quote, reference) => {
        const target = resolve(dirname(args.path), reference);
        const inPackage = relative(owner.dir, target);
        const problem =
          inPackage === '' || inPackage.startsWith('..')
            ? `is not a file or folder inside ${owner.name}`
            : existsSync(target)
              ? undefined
              : 'does not exist';
        if (problem) {
          errors.push({ text: `${reference} (${relative(root, target)}) ${problem}` });
          return whole;
        }
        const assetPath = [...owner.name.split('/'), ...inPackage.split(sep)].filter(Boolean).join('/');
        const asset = join(outDir, 'assets', ...assetPath.split('/'));
        mkdirSync(dirname(asset), { recursive: true });
        cpSync(target, asset, { recursive: true });
        const suffix = reference.endsWith('/') ? '/' : '';
        return `new URL('../assets/${assetPath}${suffix}', import.meta.url)`;
      });
      return { contents, loader: 'js', errors };
    });
  },
};

/** Relative file references left in the output that do not resolve inside the bundle. */
function danglingReferences(files) {
  const reference =
    /(?:new URL\(\s*|createRequire\(import\.meta\.url\)\(\s*)(['"`])(\.\.?\/[^'"`]+)\1\s*(?:,\s*import\.meta\.url\s*)?\)/g;
  const dangling = [];
  for (const file of files.filter((name) => name.endsWith('.mjs'))) {
    for (const [, , path] of readFileSync(file, 'utf8').matchAll(reference)) {
      const target = resolve(dirname(file), path);
      if (!target.startsWith(outDir + sep) || !existsSync(target)) {
        dangling.push(`${relative(outDir, file)}: ${path}`);
      }
    }
  }
  return dangling;
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(codeDir, { recursive: true });
const started = Date.now();
const result = await build({
  entryPoints: Object.fromEntries(
    Object.entries(spec.entries).map(([name, path]) => [name, join(serviceDir, path)]),
  ),
  outdir: codeDir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  sourcemap: true,
  banner: { js: banner },
  plugins: [relocateFileReferences],
  metafile: true,
  logLevel: 'warning',
});

writeFileSync(
  join(outDir, 'package.json'),
  `${JSON.stringify({ name: manifest.name, version: manifest.version, private: true, type: 'module' }, null, 2)}\n`,
);
for (const asset of spec.assets ?? []) {
  const source = join(serviceDir, asset);
  if (existsSync(source)) cpSync(source, join(outDir, asset), { recursive: true });
}

const outputs = Object.keys(result.metafile.outputs).map((file) => resolve(file));
const dangling = danglingReferences(outputs);
if (dangling.length > 0) {
  process.stderr.write(
    `${manifest.name}: the bundle refers to files it does not carry:\n  ${dangling.join('\n  ')}\n`,
  );
  process.exit(1);
}
const bytes = outputs
  .filter((file) => file.endsWith('.mjs'))
  .reduce((sum, file) => sum + statSync(file).size, 0);
process.stdout.write(
  `${manifest.name}: ${Object.keys(spec.entries)
    .map((name) => `dist/${name}.mjs`)
    .join(
      ', ',
    )} in ${relative(serviceDir, outDir).startsWith('..') ? outDir : relative(serviceDir, outDir)} (${(bytes / 1e6).toFixed(1)} MB, ${Date.now() - started} ms)\n`,
);
