/**
 * Where a process's CPU went, read from its `.cpuprofile` (BENCH_CPU_PROF): the busy time only — idle,
 * V8's `(program)` bucket and module loading at start-up are left out, so a short run's start does not
 * drown the steady state — as the functions with the most self time and the areas (a package of ours,
 * a dependency, the socket writes of Node itself, the garbage collector) with the most inclusive time.
 * A sample counts once for each area on its stack, so areas overlap and do not add up to 100 %.
 */

/** The parts of V8's `.cpuprofile` format read here. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** CPU time in the profile beyond idle, `(program)` and start-up module loading. */
  busyMs: number;
  /** Module loading (start-up), apart. */
  startupMs: number;
  /** Functions by self time, share of busyMs. */
  functions: Array<{ name: string; where: string; percent: number }>;
  /** Areas by inclusive time, share of busyMs. */
  areas: Array<{ area: string; percent: number }>;
}

const NOT_BUSY = new Set(['(idle)', '(program)']);

/** Where a frame's code lives: a workspace file, a dependency's package name, a Node internal, native. */
export function whereOf(url: string): string {
  if (url === '') return '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  const workspace = /\/((?:services|libs|tests)\/[^/]+\/(?:src|dist)\/.*)$/.exec(url);
  if (workspace) return workspace[1]!.replace('/dist/', '/src/').replace(/\.js$/, '.ts');
  return url.replace(/^file:\/\//, '');
}

/** The area a frame counts toward: a workspace package, a dependency, or a kind of Node internal. */
export function areaOf(functionName: string, url: string): string {
  if (functionName === '(garbage collector)') return 'garbage collector';
  const where = whereOf(url);
  const workspace = /^((?:services|libs|tests)\/[^/]+)\//.exec(where);
  if (workspace) return workspace[1]!;
  if (/^node:(net|internal\/stream_base_commons)$/.test(url) || functionName === 'writev')
    return 'node: socket writes';
  if (url.startsWith('node:_http') || url === 'node:http') return 'node: http';
  if (url.startsWith('node:internal/crypto') || url === 'node:crypto') return 'node: crypto';
  if (url.startsWith('node:')) return '';
  return where === '(native)' ? '' : where;
}

const isStartup = (url: string): boolean =>
  url.startsWith('node:internal/modules/') || url.includes('/node_modules/tsx/');

export function summarizeCpuProfile(profile: CpuProfile, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const timeOf = new Map<number, number>();
  profile.samples.forEach((id, index) =>
    timeOf.set(id, (timeOf.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)),
  );

  let busy = 0;
  let startup = 0;
  const self = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  for (const [id, us] of timeOf) {
    const node = byId.get(id);
    if (node === undefined || NOT_BUSY.has(node.callFrame.functionName)) continue;
    const stack: CpuProfile['nodes'] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at);
      if (frame !== undefined) stack.push(frame);
    }
    if (stack.some((frame) => isStartup(frame.callFrame.url))) {
      startup += us;
      continue;
    }
    busy += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = `${whereOf(url)}${lineNumber >= 0 && url !== '' ? `:${lineNumber + 1}` : ''}`;
    const key = `${functionName}\u0000${where}`;
    const entry = self.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    self.set(key, entry);
    const seen = new Set<string>();
    for (const frame of stack) {
      const area = areaOf(frame.callFrame.functionName, frame.callFrame.url);
      if (area === '' || seen.has(area)) continue;
      seen.add(area);
      areas.set(area, (areas.get(area) ?? 0) + us);
    }
  }
  const percent = (us: number): number => (busy === 0 ? 0 : Math.round((1000 * us) / busy) / 10);
  return {
    busyMs: Math.round(busy / 100) / 10,
    startupMs: Math.round(startup / 100) / 10,
    functions: [...self.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(({ name, where, us }) => ({ name, where, percent: percent(us) })),
    areas: [...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, us]) => ({ area, percent: percent(us) })),
  };
}

/** One markdown section per process: its areas and its functions, side by side in one table. */
export function renderProfileSummaries(
  summaries: ReadonlyArray<{ process: string; summary: ProfileSummary }>,
): string {
  const sections = summaries.map(({ process, summary }) => {
    const rows = Math.max(summary.areas.length, summary.functions.length);
    const lines = [
      `### ${process}: ${summary.busyMs} ms busy (start-up module loading ${summary.startupMs} ms, left out)`,
      '',
      '| area (inclusive) | % | function (self) | where | % |',
      '| --- | ---: | --- | --- | ---: |',
    ];
    for (let row = 0; row < rows; row++) {
      const area = summary.areas[row];
      const fn = summary.functions[row];
      lines.push(
        `| ${area?.area ?? ''} | ${area?.percent ?? ''} | ${fn ? `\`${fn.name}\`` : ''} | ${fn?.where ?? ''} | ${fn?.percent ?? ''} |`,
      );
    }
    return lines.join('\n');
  });
  return `${sections.join('\n\n')}\n`;
}
