// defineTool's JSON and error mapping, run in Node with the host import
// (`hermetic:tool/host@0.3.0`) mapped to a fake that records calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { register } from 'node:module';

const FAKE_HOST = `
globalThis.__hostCalls ??= [];
export function log(level, message) { globalThis.__hostCalls.push(['log', level, message]); }
export function progress(done, total, message) { globalThis.__hostCalls.push(['progress', done, total, message]); }
`;
const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier === 'hermetic:tool/host@0.3.0') {
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(FAKE_HOST)}), shortCircuit: true };
  }
  return next(specifier, context);
}
`;
register('data:text/javascript,' + encodeURIComponent(HOOKS));
const { defineTool, ToolError, errorMessage, log, progress } = await import('../hermetic-tool.js');

const schema = { name: 't', description: 'd', parameters: { type: 'object', properties: {} } };
const ctx = { callId: 'c1', tenant: 'default', session: 's' };

/** What the component would return: the ok string, or `{err}` for a thrown string. */
async function call(tool, args) {
  try {
    return { ok: await tool.handle(args, ctx) };
  } catch (e) {
    assert.equal(typeof e, 'string', 'the err case must be a string');
    return { err: e };
  }
}

test('schema is JSON text, from an object or a string', () => {
  assert.deepEqual(JSON.parse(defineTool({ schema, handle() {} }).schema()), schema);
  assert.equal(defineTool({ schema: JSON.stringify(schema), handle() {} }).schema(), JSON.stringify(schema));
  assert.throws(() => defineTool({ schema: { description: 'no name' }, handle() {} }), /name/);
  assert.throws(() => defineTool({ schema }), /handle/);
});

test('handle gets parsed args and ctx, returns JSON', async () => {
  const tool = defineTool({ schema, handle: (a, c) => ({ a, c }) });
  const r = await call(tool, '{"x":[1,"é"]}');
  assert.deepEqual(JSON.parse(r.ok), { a: { x: [1, 'é'] }, c: ctx });
  assert.deepEqual(await call(defineTool({ schema, handle() {} }), '{}'), { ok: 'null' });
  assert.deepEqual(await call(defineTool({ schema, handle: () => 'text' }), '{}'), { ok: '"text"' });
});

test('async handle resolves; rejections and throws become the message', async () => {
  assert.deepEqual(await call(defineTool({ schema, handle: async () => ({ n: 1 }) }), '{}'), { ok: '{"n":1}' });
  assert.deepEqual(await call(defineTool({ schema, handle: async () => { throw new ToolError('nope'); } }), '{}'), { err: 'nope' });
  assert.deepEqual(await call(defineTool({ schema, handle: () => { throw new TypeError('bad type'); } }), '{}'), { err: 'bad type' });
  assert.deepEqual(await call(defineTool({ schema, handle: () => { throw 'plain'; } }), '{}'), { err: 'plain' });
  assert.deepEqual(await call(defineTool({ schema, handle: async () => 1n }), '{}'), { err: 'Do not know how to serialize a BigInt' });
  assert.deepEqual(await call(defineTool({ schema, handle: () => () => 1 }), '{}'), { err: 'result is not JSON: function' });
});

test('arguments that are not JSON are an error', async () => {
  const r = await call(defineTool({ schema, handle: () => 1 }), '{oops');
  assert.match(r.err, /^arguments are not JSON/);
});

test('check defaults to true; a throwing check is false', () => {
  assert.equal(defineTool({ schema, handle() {} }).check(), true);
  assert.equal(defineTool({ schema, check: () => 0, handle() {} }).check(), false);
  assert.equal(defineTool({ schema, check() { throw new Error('x'); }, handle() {} }).check(), false);
});

test('errorMessage', () => {
  assert.equal(errorMessage(new ToolError('m')), 'm');
  assert.equal(errorMessage({ code: 1 }), '{"code":1}');
  assert.equal(errorMessage(undefined), 'undefined');
});

test('log and progress hide the WIT types (enum strings, u64 BigInt, option)', () => {
  globalThis.__hostCalls = [];
  log('WARN', 'w');
  log('bogus', 42);
  progress(1.7, 3, 'step');
  progress(2, null);
  progress(-5n, undefined, 'neg');
  assert.deepEqual(globalThis.__hostCalls, [
    ['log', 'warn', 'w'],
    ['log', 'info', '42'],
    ['progress', 1n, 3n, 'step'],
    ['progress', 2n, undefined, ''],
    ['progress', 0n, undefined, 'neg'],
  ]);
  assert.throws(() => progress('x', 1), /done must be a number/);
});
