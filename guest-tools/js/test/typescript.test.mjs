// TypeScript projects: the transpile step, the type check, and the message when
// `typescript` is not installed. No componentize-js run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  chooseEntry, loadTypeScript, transpileProject, tsFiles, typecheckProject, TYPESCRIPT_INSTALL, TYPESCRIPT_VERSION,
} from '../build.mjs';

const JS = dirname(dirname(fileURLToPath(import.meta.url)));
const DECL = 'name = "ts_tool"\ntoolset = "test"\ndescription = "d"\n';

async function project(files) {
  const dir = await mkdtemp(join(tmpdir(), 'hermetic-ts-test-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

/** A project with the helper and its types beside the app, as build.mjs lays it out. */
async function withHelper(files) {
  const dir = await project(files);
  await cp(join(JS, 'hermetic-tool.js'), join(dir, 'hermetic-tool.js'));
  await cp(join(JS, 'hermetic-tool.d.ts'), join(dir, 'hermetic-tool.d.ts'));
  return dir;
}

const GOOD_APP = `import { defineTool, ToolError } from './hermetic-tool.js';
import type { ToolContext } from './hermetic-tool.js';
interface Args { n: number }
export const tool = defineTool<Args>({
  schema: { name: 'ts_tool', parameters: { type: 'object', properties: { n: { type: 'integer' } } } },
  handle(args: Args, ctx: ToolContext) {
    if (args.n < 0) throw new ToolError('negative');
    return { twice: args.n * 2, call: ctx.callId };
  },
});
`;

test('the pinned typescript is the one package.json pins, and it loads', async () => {
  const pkg = JSON.parse(await readFile(join(JS, 'package.json'), 'utf8'));
  assert.equal(pkg.dependencies.typescript, TYPESCRIPT_VERSION);
  assert.equal((await loadTypeScript()).version, TYPESCRIPT_VERSION);
});

test('chooseEntry: app.js, else app.ts, unless told', async () => {
  const ts = await project({ 'app.ts': '' });
  const both = await project({ 'app.ts': '', 'app.js': '' });
  try {
    assert.equal(chooseEntry(ts), 'app.ts');
    assert.equal(chooseEntry(both), 'app.js');
    assert.equal(chooseEntry(both, 'app.ts'), 'app.ts');
  } finally {
    await rm(ts, { recursive: true });
    await rm(both, { recursive: true });
  }
});

test('transpileProject: every .ts file, .js and .ts import specifiers, types erased', async () => {
  const ts = await loadTypeScript();
  const dir = await project({
    'app.ts': `import { double } from './lib/math.js';
import { greet } from './lib/greet.ts';
import type { Shape } from './lib/types.js';
export const area = (s: Shape): number => double(s.w * s.h) / 2;
export const hello: string = greet('ts');
export enum Color { Red = 1 }
`,
    'lib/math.ts': 'export function double(x: number): number { return x * 2; }\n',
    'lib/greet.ts': 'export const greet = (who: string) => `hi ${who}` as const;\n',
    'lib/types.ts': 'export interface Shape { w: number; h: number }\n',
    'lib/ambient.d.ts': 'declare const NOT_EMITTED: number;\n',
  });
  try {
    assert.deepEqual(await tsFiles(dir), ['app.ts', 'lib/greet.ts', 'lib/math.ts', 'lib/types.ts']);
    const written = await transpileProject(ts, dir);
    assert.deepEqual(written, ['app.js', 'lib/greet.js', 'lib/math.js', 'lib/types.js']);
    assert.ok(!existsSync(join(dir, 'app.ts')), 'the .ts source is replaced');
    assert.ok(existsSync(join(dir, 'lib/ambient.d.ts')), '.d.ts files are left alone');
    const app = await readFile(join(dir, 'app.js'), 'utf8');
    assert.match(app, /from '\.\/lib\/math\.js'/);
    assert.match(app, /from ["']\.\/lib\/greet\.js["']/, 'a .ts specifier becomes .js');
    assert.doesNotMatch(app, /\.ts["']/);
    assert.doesNotMatch(app, /types|Shape|: number/, 'type-only imports and annotations are erased');
    const mod = await import(pathToFileURL(join(dir, 'app.js')).href);
    assert.equal(mod.area({ w: 3, h: 4 }), 12);
    assert.equal(mod.hello, 'hi ts');
    assert.equal(mod.Color.Red, 1);
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('transpileProject: a syntax error fails; type errors do not; x.ts beside x.js is refused', async () => {
  const ts = await loadTypeScript();
  const bad = await project({ 'app.ts': 'export const x = (;\n' });
  const typeErr = await project({ 'app.ts': 'export const x: number = "not a number";\n' });
  const clash = await project({ 'app.ts': 'export {};\n', 'app.js': 'export {};\n' });
  try {
    await assert.rejects(transpileProject(ts, bad), /syntax errors[\s\S]*app\.ts\(1,\d+\): error TS\d+/);
    assert.deepEqual(await transpileProject(ts, typeErr), ['app.js']);
    await assert.rejects(transpileProject(ts, clash), /app\.js exists too/);
  } finally {
    for (const d of [bad, typeErr, clash]) await rm(d, { recursive: true });
  }
});

test('typecheckProject: the helper types check; a type error is reported', async () => {
  const ts = await loadTypeScript();
  const good = await withHelper({ 'app.ts': GOOD_APP });
  const bad = await withHelper({
    'app.ts': GOOD_APP.replace('args.n * 2', "args.n * 'two'").replace('ctx.callId', 'ctx.callID'),
  });
  const implicitAny = await withHelper({ 'app.ts': 'export function f(x) { return x; }\n' });
  try {
    assert.equal(await typecheckProject(ts, good), '');
    const errors = await typecheckProject(ts, bad);
    assert.match(errors, /app\.ts\(8,\d+\): error TS2363/); // arithmetic on a string
    assert.match(errors, /app\.ts\(8,\d+\): error TS2551: Property 'callID' does not exist/);
    assert.match(await typecheckProject(ts, implicitAny), /error TS7006/, 'strict: no implicit any');
  } finally {
    for (const d of [good, bad, implicitAny]) await rm(d, { recursive: true });
  }
});

test('the probe (tests/probe/app.ts) passes the strict check', async () => {
  const ts = await loadTypeScript();
  const dir = await withHelper({});
  try {
    await cp(join(JS, 'tests', 'probe', 'app.ts'), join(dir, 'app.ts'));
    assert.equal(await typecheckProject(ts, dir), '');
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('loadTypeScript: not installed, or a release without the compiler API (typescript 7)', async () => {
  await assert.rejects(loadTypeScript('typescript-not-installed-for-this-test'), (e) => {
    assert.match(e.message, /needs the `typescript` package, which is not installed/);
    assert.ok(e.message.includes(`npm install --save-exact typescript@${TYPESCRIPT_VERSION}`));
    return true;
  });
  const native = 'data:text/javascript,' + encodeURIComponent("export default { version: '7.0.2' };");
  await assert.rejects(loadTypeScript(native), /typescript` \(7\.0\.2\) has no usable compiler API/);
});

function runBuild(script, args, env = {}) {
  return spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
}

test('build.mjs without typescript installed: a .ts project fails with the install command', async () => {
  // A copy of build.mjs whose node_modules has smol-toml only, like a `hermetic new --lang js` project.
  const dir = await project({ 'proj/app.ts': GOOD_APP, 'proj/declaration.toml': DECL });
  try {
    await cp(join(JS, 'build.mjs'), join(dir, 'build.mjs'));
    await mkdir(join(dir, 'node_modules'));
    await symlink(join(JS, 'node_modules', 'smol-toml'), join(dir, 'node_modules', 'smol-toml'));
    const r = runBuild(join(dir, 'build.mjs'), [join(dir, 'proj'), '-o', join(dir, 'out.wasm')]);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.includes(`run \`${TYPESCRIPT_INSTALL}\` in ${dir}`), r.stderr);
    assert.ok(!existsSync(join(dir, 'out.wasm')));
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('build.mjs --typecheck prints the type errors and fails before componentize', async () => {
  const dir = await project({
    'app.ts': GOOD_APP.replace("throw new ToolError('negative')", 'throw new ToolError(42)'),
    'declaration.toml': DECL,
  });
  try {
    const r = runBuild(join(JS, 'build.mjs'), [dir, '-o', join(dir, 'out.wasm'), '--typecheck']);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /type errors \(typescript 5\.9\.3, strict\):\napp\.ts\(7,\d+\): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'/);
    assert.doesNotMatch(r.stderr, /componentize-js \(/);
    const plain = runBuild(join(JS, 'build.mjs'), [join(JS, 'examples', 'text_stats'), '-o', join(dir, 'x.wasm'), '--typecheck']);
    assert.match(plain.stderr, /--typecheck is for TypeScript projects/);
  } finally {
    await rm(dir, { recursive: true });
  }
});
