/**
 * The deploy files checked without building an image (this machine has no registry to pull
 * node:24-slim from): each Dockerfile under infra/docker copies only paths that exist in the repository
 * and that .dockerignore leaves in the build context, takes `--from` only stages defined before, and
 * runs only entries the service's bundle has; infra/compose.yaml builds its services from those
 * Dockerfiles' targets and no longer mounts the repository.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const dockerDir = join(repo, 'infra/docker');
const dockerfiles = readdirSync(dockerDir).filter((name) => /^Dockerfile(\..+)?$/.test(name));

interface Instruction {
  keyword: string;
  /** The words after the keyword, a JSON (exec) form read as its array. */
  args: string[];
  line: number;
}

/** Dockerfile instructions: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const result: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) return;
    if (pending === '') start = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const whole = pending + line;
    pending = '';
    const [keyword = '', ...rest] = whole.split(/\s+/);
    const tail = whole.slice(keyword.length).trim();
    const args = tail.startsWith('[') ? (JSON.parse(tail) as string[]) : rest;
    result.push({ keyword: keyword.toUpperCase(), args, line: start });
  });
  return result;
}

/** Folder names .dockerignore drops anywhere (`**\/name`) and top-level paths it drops. */
function ignoredNames(): { anywhere: Set<string>; topLevel: Set<string> } {
  const patterns = readFileSync(join(repo, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  return {
    anywhere: new Set(patterns.filter((p) => p.startsWith('**/')).map((p) => p.slice(3))),
    topLevel: new Set(patterns.filter((p) => !p.includes('/'))),
  };
}

const bundleEntries = (service: string): string[] =>
  Object.keys(
    (
      JSON.parse(readFileSync(join(repo, 'services', service, 'package.json'), 'utf8')) as {
        bundle?: { entries?: Record<string, string> };
      }
    ).bundle?.entries ?? {},
  );

describe.each(dockerfiles)('infra/docker/%s', (name) => {
  const steps = instructions(readFileSync(join(dockerDir, name), 'utf8'));
  const stages = steps
    .filter((step) => step.keyword === 'FROM')
    .map((step) => step.args[step.args.findIndex((word) => word.toUpperCase() === 'AS') + 1]);

  it('copies from the build context only paths that exist in the repository and that .dockerignore keeps', () => {
    const ignored = ignoredNames();
    const copies = steps.filter(
      (step) =>
        (step.keyword === 'COPY' || step.keyword === 'ADD') &&
        !step.args.some((arg) => arg.startsWith('--from=')),
    );
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const sources = copy.args.filter((arg) => !arg.startsWith('--')).slice(0, -1);
      expect(sources.length, `line ${copy.line}`).toBeGreaterThan(0);
      for (const source of sources) {
        const path = posix.normalize(source);
        expect(existsSync(join(repo, path)), `line ${copy.line}: ${source} does not exist`).toBe(true);
        const segments = path.split('/');
        const dropped =
          segments.some((segment) => ignored.anywhere.has(segment)) || ignored.topLevel.has(segments[0]!);
        expect(dropped, `line ${copy.line}: .dockerignore drops ${source}`).toBe(false);
      }
    }
  });

  it('copies --from only stages defined above, and each service stage runs an entry its bundle has', () => {
    steps.forEach((step, index) => {
      const from = step.args.find((arg) => arg.startsWith('--from='))?.slice('--from='.length);
      if (from === undefined) return;
      const before = steps
        .slice(0, index)
        .filter((s) => s.keyword === 'FROM')
        .map((s) => s.args.at(-1));
      expect(before, `line ${step.line}: --from=${from}`).toContain(from);
    });
    for (const service of ['gateway', 'assembler', 'executor', 'recall']) {
      expect(stages).toContain(service);
      const stageStart = steps.findIndex((step) => step.keyword === 'FROM' && step.args.at(-1) === service);
      const nextStage = steps.findIndex((step, index) => index > stageStart && step.keyword === 'FROM');
      const body = steps.slice(stageStart, nextStage === -1 ? undefined : nextStage);
      expect(
        body.some(
          (step) => step.keyword === 'COPY' && step.args.includes(`/repo/services/${service}/bundle`),
        ),
        `${service} copies its bundle`,
      ).toBe(true);
      const command = body.filter((step) => step.keyword === 'CMD').at(-1)?.args ?? [];
      // `node`, its flags (the executor bounds V8's young generation), then the bundle's entry.
      expect(command.slice(0, 1)).toEqual(['node']);
      expect(command.slice(1, -1).every((flag) => flag.startsWith('--'))).toBe(true);
      expect(bundleEntries(service).map((entry) => `dist/${entry}.mjs`)).toContain(command.at(-1));
    }
  });
});

describe('infra/compose.yaml', () => {
  type ComposeService = {
    image?: string;
    build?: { context?: string; dockerfile?: string; target?: string };
    command?: string[];
    volumes?: string[];
  };
  const compose = parseYaml(readFileSync(join(repo, 'infra/compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };

  it("runs the services from the Dockerfile's images, with commands their bundles have, and mounts no source", () => {
    const built = Object.entries(compose.services).filter(([, service]) => service.build);
    expect(built.map(([name]) => name).sort()).toEqual(
      ['assembler', 'executor', 'gateway', 'provision', 'recall'].sort(),
    );
    for (const [name, service] of built) {
      const build = service.build!;
      expect(posix.normalize(posix.join('infra', build.context ?? '.'))).toBe('.');
      const dockerfile = join(repo, build.dockerfile ?? 'Dockerfile');
      expect(existsSync(dockerfile), `${name}: ${build.dockerfile}`).toBe(true);
      const stages = instructions(readFileSync(dockerfile, 'utf8'))
        .filter((step) => step.keyword === 'FROM')
        .map((step) => step.args.at(-1));
      expect(stages, name).toContain(build.target);
      expect(service.volumes ?? [], name).toEqual([]);
      if (service.command) {
        expect(service.command[0]).toBe('node');
        const entries = bundleEntries(build.target!).map((entry) => `dist/${entry}.mjs`);
        expect(entries, `${name}: ${service.command.join(' ')}`).toContain(service.command[1]);
      }
    }
  });
});
