// hermetic-tool.js: write a hermetic tool in JavaScript.
//
//   import { defineTool, ToolError, log, progress } from './hermetic-tool.js';
//   export const tool = defineTool({
//     schema: { name: 'my_tool', description: '…', parameters: { type: 'object', properties: {} } },
//     check() { return true; },                 // optional
//     async handle(args, ctx) { return { ok: true }; },
//   });
//
// `tool` is the export of the WIT interface `hermetic:tool/tool@0.3.0`: the app must
// export it under that name. build.mjs puts this file next to the app when it builds.
// Plain ES module without dependencies: componentize-js resolves relative imports
// itself, and Node runs it for unit tests (with the host import mapped to a fake).

import * as host from 'hermetic:tool/host@0.3.0';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error']);

/** An error whose message the caller (the agent) gets as the tool's error. */
export class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolError';
  }
}

/** The error string for anything thrown: an Error's message, else the value as text. */
export function errorMessage(e) {
  if (e instanceof Error) return e.message || e.name || 'error';
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}

/** A log record attributed to this tool by the host: level is trace|debug|info|warn|error. */
export function log(level, message) {
  const l = String(level).toLowerCase();
  host.log(LEVELS.has(l) ? l : 'info', String(message));
}

function u64(n, what) {
  if (typeof n === 'bigint') return n < 0n ? 0n : n;
  const v = Number(n);
  if (!Number.isFinite(v)) throw new ToolError(`progress: ${what} must be a number`);
  return BigInt(Math.max(0, Math.trunc(v)));
}

/** Progress of the current call: `done` of `total` (null/undefined when unknown). */
export function progress(done, total, message = '') {
  host.progress(u64(done, 'done'), total == null ? undefined : u64(total, 'total'), String(message));
}

function toResult(value) {
  // `undefined` (no return) is JSON null; everything else must be JSON-able.
  const text = value === undefined ? 'null' : JSON.stringify(value);
  if (text === undefined) throw new ToolError(`result is not JSON: ${typeof value}`);
  return text;
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

/**
 * The `tool` export for a spec `{ schema, check?, handle }`.
 * - schema: the OpenAI function schema `{name, description, parameters}` (object or JSON text).
 * - check(): optional, may the tool work now (e.g. is its env var granted)? Default true.
 * - handle(args, ctx): args is the parsed JSON object, ctx `{callId, tenant, session}`;
 *   returns (or resolves to) any JSON-able value. Throwing (or rejecting) makes the
 *   call's error: the Error's message only.
 */
export function defineTool(spec) {
  if (!spec || typeof spec.handle !== 'function') throw new TypeError('defineTool: handle(args, ctx) is required');
  const schemaText = typeof spec.schema === 'string' ? spec.schema : JSON.stringify(spec.schema);
  let parsed;
  try {
    parsed = JSON.parse(schemaText);
  } catch (e) {
    throw new TypeError(`defineTool: schema is not JSON: ${errorMessage(e)}`);
  }
  if (!parsed || typeof parsed.name !== 'string' || !parsed.name) {
    throw new TypeError('defineTool: schema needs a "name"');
  }
  const fail = (e) => {
    // The component's `result` err case: a thrown string.
    throw errorMessage(e);
  };
  return {
    schema() {
      return schemaText;
    },
    check() {
      if (typeof spec.check !== 'function') return true;
      try {
        return Boolean(spec.check());
      } catch {
        return false;
      }
    },
    handle(args, ctx) {
      let a;
      try {
        a = JSON.parse(args);
      } catch (e) {
        fail(new ToolError(`arguments are not JSON: ${errorMessage(e)}`));
      }
      const c = { callId: ctx?.callId ?? '', tenant: ctx?.tenant ?? '', session: ctx?.session ?? '' };
      let out;
      try {
        out = spec.handle(a, c);
      } catch (e) {
        fail(e);
      }
      if (isThenable(out)) {
        return Promise.resolve(out).then((v) => {
          try {
            return toResult(v);
          } catch (e) {
            return fail(e);
          }
        }, fail);
      }
      try {
        return toResult(out);
      } catch (e) {
        fail(e);
      }
    },
  };
}
