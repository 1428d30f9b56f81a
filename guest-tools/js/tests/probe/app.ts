// js_probe: hostile and diagnostic modes for testing the JavaScript toolchain on the host.
// Written in TypeScript: build.mjs transpiles it (and `--typecheck` checks it, strict).
import { defineTool, ToolError, log, progress } from './hermetic-tool.js';
import type { ToolContext } from './hermetic-tool.js';

const MAX_BODY = 64 * 1024;

const MODES = ['alloc', 'spin', 'fetch', 'echo', 'progress', 'time', 'throw', 'reject', 'big'] as const;
type Mode = (typeof MODES)[number];

interface ProbeArgs {
  mode: Mode;
  url?: string;
  method?: string;
  size?: number;
  [key: string]: unknown;
}

async function fetchMode(args: ProbeArgs): Promise<{ status: number; body: string }> {
  if (typeof args.url !== 'string') throw new ToolError('fetch: `url` is required');
  const res = await fetch(args.url, { method: args.method ?? 'GET' });
  const body = await res.text();
  return { status: res.status, body: body.length > MAX_BODY ? body.slice(0, MAX_BODY) : body };
}

export const tool = defineTool<ProbeArgs>({
  schema: {
    name: 'js_probe',
    description: 'Test probe (hostile modes). Not for agents.',
    parameters: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: [...MODES] },
        url: { type: 'string' },
        method: { type: 'string' },
        size: { type: 'integer' },
      },
      required: ['mode'],
    },
  },
  check(): boolean {
    return true;
  },
  handle(args: ProbeArgs, ctx: ToolContext) {
    switch (args.mode) {
      case 'alloc': {
        // Keep 1 MiB strings until the memory cap stops the engine.
        const keep: string[] = [];
        for (let i = 0; ; i++) {
          keep.push('x'.repeat(1 << 20) + i);
          if (i % 64 === 0) log('debug', `allocated ${i} MiB`);
        }
      }
      case 'spin':
        for (;;) {}
      case 'fetch':
        return fetchMode(args);
      case 'echo':
        return { args, ctx };
      case 'progress':
        log('info', 'probe: starting');
        for (let i = 1; i <= 3; i++) progress(i, 3, `step ${i}`);
        progress(7, null, 'total unknown');
        log('warn', 'probe: done');
        return { steps: 3 };
      case 'time': {
        const a = Date.now();
        const r = [Math.random(), Math.random()];
        return { now: a, iso: new Date(a).toISOString(), random: r, perf: typeof performance === 'object' ? performance.now() : null };
      }
      case 'throw':
        throw new ToolError('probe: asked to fail');
      case 'reject':
        return Promise.reject(new Error('probe: async failure'));
      case 'big':
        return 'y'.repeat(args.size ?? 100000);
      default:
        throw new ToolError(`unknown mode ${JSON.stringify((args as { mode: unknown }).mode)}`);
    }
  },
});
