#!/usr/bin/env node
// Build a hermetic tool component from a JavaScript project:
//
//   node build.mjs PROJECT_DIR -o OUT.wasm [--entry app.js|app.ts] [--typecheck] [--keep-temp] [--hermetic PATH]
//
// PROJECT_DIR holds app.js (an ES module exporting `tool`, see hermetic-tool.js) and
// declaration.toml (the tool's declaration). The build copies the project into a
// temporary directory (with hermetic-tool.js beside app.js unless the project has its
// own), asks the host for the WIT world the declaration needs (`hermetic tool world`:
// the imports its capabilities link, nothing else), runs componentize-js (pinned in
// package.json; never its --aot/weval mode) with the WASI features the host does not
// need disabled, and has the host embed the declaration and check that it loads the
// result (`hermetic tool finish`). `hermetic` is $HERMETIC, else the one on PATH.
//
// TypeScript: a project with app.ts and no app.js has every .ts file of its copy
// transpiled to .js (typescript's transpileModule: no type check, ESNext modules,
// ES2022) before the build; `--typecheck` first runs a strict full check and fails on
// errors. `typescript` is loaded only then, so plain JavaScript builds never need it.

import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The world `hermetic tool world` writes. */
export const WORLD = 'tool';
const HERE = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------- the host's steps

/** The hermetic command: $HERMETIC, else `hermetic` on PATH. */
export function hermeticCommand(env = process.env) {
  return env.HERMETIC || 'hermetic';
}

/** Runs `hermetic ARGS` and returns its stdout; its error (the host's words) is thrown. */
export function runHermetic(args, { hermetic = hermeticCommand(), say = () => {} } = {}) {
  say(`[build] ${hermetic} ${args.join(' ')}`);
  const r = spawnSync(hermetic, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error?.code === 'ENOENT') {
    throw new Error(
      `the hermetic command was not found (${hermetic}): it writes the WIT world and embeds the declaration; ` +
        'put `hermetic` on PATH or set HERMETIC=/path/to/hermetic',
    );
  }
  if (r.error) throw r.error;
  if (r.status !== 0) {
    const said = r.stderr.trim().replace(/^error: /, '');
    throw new Error(`hermetic ${args.slice(0, 2).join(' ')}: ${said || `exit ${r.status}`}`);
  }
  return r.stdout;
}

/** The interfaces a WIT world imports (its `import X;` lines). */
export function worldImports(text) {
  return [...text.matchAll(/^\s*import\s+([^;\s]+)\s*;/gm)].map((m) => m[1]);
}

/**
 * componentize-js features to disable for a world importing `imports`: `stdio` and
 * `fetch-event` always; `http` (fetch) unless the world imports wasi:http, which the
 * host links only into tools that declare network destinations.
 */
export function disabledFeatures(imports) {
  const off = ['stdio', 'fetch-event'];
  if (!imports.some((i) => i.startsWith('wasi:http/'))) off.push('http');
  return off;
}

// ---------------------------------------------------------------- TypeScript

/** The typescript release build.mjs uses (pinned exactly in package.json). */
export const TYPESCRIPT_VERSION = '5.9.3';
export const TYPESCRIPT_INSTALL = `npm install --save-exact typescript@${TYPESCRIPT_VERSION}`;

/**
 * The typescript compiler API, loaded on demand. `spec` is for tests. typescript 7
 * (the native compiler, which jco pulls in) has no JavaScript API, so only 5.x is taken.
 */
export async function loadTypeScript(spec = 'typescript') {
  const fix = `run \`${TYPESCRIPT_INSTALL}\` in ${HERE}`;
  let mod;
  try {
    mod = await import(spec);
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(`a TypeScript project (app.ts) needs the \`typescript\` package, which is not installed: ${fix}`);
    }
    throw e;
  }
  const ts = mod.default ?? mod;
  if (typeof ts.transpileModule !== 'function' || typeof ts.createProgram !== 'function' || !/^5\./.test(String(ts.version))) {
    throw new Error(`the installed \`typescript\` (${ts.version ?? 'unknown version'}) has no usable compiler API (5.x is needed): ${fix}`);
  }
  return ts;
}

const TS_SOURCE = /(?<!\.d)\.(m?)ts$/; // app.ts, lib.mts; not types.d.ts

/** Relative paths (with `/`) of the TypeScript sources under `dir`; `.d.ts` too when `declarations`. */
export async function tsFiles(dir, { declarations = false } = {}) {
  const out = [];
  const walk = async (d) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (SKIP.has(e.name)) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (TS_SOURCE.test(e.name) || (declarations && /\.d\.m?ts$/.test(e.name))) out.push(relative(dir, p).split('\\').join('/'));
    }
  };
  await walk(dir);
  return out.sort();
}

/** The transpile step's options: modules stay ES modules, `./x.ts` specifiers become `./x.js`. */
export function transpileOptions(ts) {
  return {
    module: ts.ModuleKind.ESNext,
    target: ts.ScriptTarget.ES2022,
    rewriteRelativeImportExtensions: true,
    sourceMap: false,
    inlineSourceMap: false,
  };
}

/** The `--typecheck` options: strict, no emit, resolution as the build resolves imports. */
export function typecheckOptions(ts) {
  return {
    ...transpileOptions(ts),
    strict: true,
    noEmit: true,
    isolatedModules: true, // what transpileModule (one file at a time) can compile
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    forceConsistentCasingInFileNames: true,
    // The engine's globals: the language plus fetch, URL, TextEncoder, performance, …
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
  };
}

function formatDiagnostics(ts, diags, dir) {
  return ts.formatDiagnostics(diags, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  }).trimEnd();
}

/**
 * Transpiles every .ts (.mts) file under `dir` in place: `x.ts` becomes `x.js` (`x.mts`,
 * `x.mjs`) and the source is removed. Types are not checked; a syntax error fails.
 * Returns the relative paths of the files written.
 */
export async function transpileProject(ts, dir, { shown = dir } = {}) {
  const written = [];
  for (const rel of await tsFiles(dir)) {
    const src = join(dir, rel);
    const outRel = rel.replace(TS_SOURCE, '.$1js');
    const out = join(dir, outRel);
    if (existsSync(out)) throw new Error(`${join(shown, rel)}: ${outRel} exists too; keep only one of them`);
    const r = ts.transpileModule(await readFile(src, 'utf8'), {
      compilerOptions: transpileOptions(ts),
      fileName: rel,
      reportDiagnostics: true,
    });
    if (r.diagnostics?.length) {
      throw new Error(`TypeScript syntax errors in ${shown}:\n${formatDiagnostics(ts, r.diagnostics, dir)}`);
    }
    await writeFile(out, r.outputText);
    await rm(src);
    written.push(outRel);
  }
  return written;
}

/** A strict type check of every .ts file under `dir`: the formatted errors ('' when none). */
export async function typecheckProject(ts, dir) {
  const roots = (await tsFiles(dir, { declarations: true })).map((f) => join(dir, f));
  const program = ts.createProgram(roots, typecheckOptions(ts));
  const diags = ts.getPreEmitDiagnostics(program);
  return diags.length ? formatDiagnostics(ts, diags, dir) : '';
}

/** The entry module: `entry` when given, else app.js, else app.ts. */
export function chooseEntry(project, entry) {
  if (entry) return entry;
  if (!existsSync(join(project, 'app.js')) && existsSync(join(project, 'app.ts'))) return 'app.ts';
  return 'app.js';
}

// ---------------------------------------------------------------- the build

async function need(spec, what) {
  try {
    return await import(spec);
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(`${what} could not be loaded (${e.message}): run \`npm ci\` in ${HERE}`);
    }
    throw e;
  }
}

const SKIP = new Set(['node_modules', '.git']);

async function copyProject(from, to) {
  await cp(from, to, {
    recursive: true,
    filter: (src) => {
      const b = basename(src);
      return src === from || !(SKIP.has(b) || b.endsWith('.wasm'));
    },
  });
}

/** Node's syntax check of every module under `dir` (componentize-js only says "failed to parse"). */
async function checkSyntax(dir, shown = dir) {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await checkSyntax(p, join(shown, e.name));
    else if (/\.m?js$/.test(e.name)) {
      const r = spawnSync(process.execPath, ['--input-type=module', '--check'], { input: await readFile(p), encoding: 'utf8' });
      if (r.status !== 0) {
        const msg = r.stderr.split('\n').filter((l) => l && !/^\s+at |^Node\.js /.test(l)).join('\n');
        throw new Error(`${join(shown, e.name)}: not a valid ES module:\n${msg.replace(/^\[stdin\]/, e.name)}`);
      }
    }
  }
}

export async function build({ project, out, entry, typecheck = false, keepTemp = false, hermetic = hermeticCommand(), say = console.error }) {
  const t0 = Date.now();
  project = resolve(project);
  out = resolve(out);
  const declPath = join(project, 'declaration.toml');
  entry = chooseEntry(project, entry);
  const typescript = TS_SOURCE.test(entry);
  if (!existsSync(join(project, entry))) throw new Error(`${join(project, entry)}: not found (the tool's ES module)`);
  if (typecheck && !typescript) throw new Error(`--typecheck is for TypeScript projects (app.ts); the entry is ${entry}`);
  if (!existsSync(declPath)) throw new Error(`${declPath}: not found (every tool needs a declaration)`);
  const ts = typescript ? await loadTypeScript() : null;
  const { componentize } = await need('@bytecodealliance/componentize-js', 'componentize-js');

  const tmp = await mkdtemp(join(tmpdir(), 'hermetic-js-'));
  const cwd = process.cwd();
  try {
    const src = join(tmp, 'src');
    await copyProject(project, src);
    for (const f of ['hermetic-tool.js', 'hermetic-tool.d.ts']) {
      if (!existsSync(join(src, f)) && existsSync(join(HERE, f))) await cp(join(HERE, f), join(src, f));
    }
    if (ts) {
      if (typecheck) {
        const t = Date.now();
        const errors = await typecheckProject(ts, src);
        if (errors) throw new Error(`type errors (typescript ${ts.version}, strict):\n${errors.replaceAll(src, project)}`);
        say(`[build] typecheck: no errors (typescript ${ts.version}, ${((Date.now() - t) / 1000).toFixed(1)} s)`);
      }
      const written = await transpileProject(ts, src, { shown: project });
      say(`[build] transpiled ${written.length} TypeScript file(s) with typescript ${ts.version}${typecheck ? '' : ' (types not checked; --typecheck checks them)'}`);
      entry = entry.replace(TS_SOURCE, '.$1js');
    }
    await checkSyntax(src, project);
    // The host checks the declaration and says what the world imports.
    const wit = join(tmp, 'wit');
    runHermetic(['tool', 'world', declPath, '--out', wit], { hermetic, say });
    const imports = worldImports(await readFile(join(wit, 'world.wit'), 'utf8'));
    const disableFeatures = disabledFeatures(imports);
    say(`[build] componentize-js (world imports: ${['host', ...imports].join(', ')}; disabled: ${disableFeatures.join(', ')})…`);
    // componentize-js maps the source's directory (or the cwd, when it contains it)
    // into the engine to resolve relative imports: work from the copy.
    process.chdir(src);
    const { component } = await componentize({
      sourcePath: join(src, entry),
      witPath: wit,
      worldName: WORLD,
      disableFeatures,
      enableAot: false,
    });
    process.chdir(cwd);
    const raw = join(tmp, 'component.wasm');
    await writeFile(raw, new Uint8Array(component));
    await mkdir(dirname(out), { recursive: true });
    // The declaration embedded, and the host's load as the check (core instances,
    // imports, schema): a component it would refuse is never written.
    const summary = JSON.parse(runHermetic(['tool', 'finish', raw, declPath, '-o', out], { hermetic, say }));
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    say(`[build] wrote ${out}: ${summary.bytes} bytes, ${secs} s; the host loads it`);
    say(`[build] imports: ${summary.imports.join(' ')}`);
    return { bytes: summary.bytes, imports: summary.imports, seconds: Number(secs) };
  } finally {
    process.chdir(cwd);
    if (keepTemp) say(`[build] kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
  }
}

function usage() {
  return 'usage: node build.mjs PROJECT_DIR -o OUT.wasm [--entry app.js|app.ts] [--typecheck] [--keep-temp] [--hermetic PATH]';
}

async function main(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-o' || a === '--out') opts.out = argv[++i];
    else if (a === '--entry') opts.entry = argv[++i];
    else if (a === '--keep-temp') opts.keepTemp = true;
    else if (a === '--hermetic') opts.hermetic = argv[++i];
    else if (a === '--typecheck') opts.typecheck = true;
    else if (a === '-h' || a === '--help') {
      console.log(usage());
      return;
    } else if (!a.startsWith('-') && !opts.project) opts.project = a;
    else throw new Error(`unknown argument ${a}\n${usage()}`);
  }
  if (!opts.project || !opts.out) throw new Error(usage());
  if (!(await stat(opts.project).catch(() => null))?.isDirectory()) throw new Error(`${opts.project}: not a directory`);
  await build(opts);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((e) => {
    console.error(`build.mjs: error: ${e.message}`);
    process.exit(1);
  });
}
