#!/usr/bin/env node
// Build a hermetic tool component from a JavaScript project:
//
//   node build.mjs PROJECT_DIR -o OUT.wasm [--entry app.js|app.ts] [--typecheck] [--keep-temp]
//
// PROJECT_DIR holds app.js (an ES module exporting `tool`, see hermetic-tool.js) and
// declaration.toml (the tool's declaration, embedded as the `hermetic:declaration`
// custom section). The build copies the project into a temporary directory (with
// hermetic-tool.js beside app.js unless the project has its own), writes a WIT world
// for what the declaration asks (the terminal, the key-value store), runs
// componentize-js (pinned in package.json; never its --aot/weval mode) with the WASI
// features the host does not need disabled, and appends the declaration.
//
// The WIT comes from `wit/` beside this script (a project made by `hermetic new
// --lang js`) or from the repository's `wit/` two levels up; HERMETIC_WIT_DIR overrides.
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

export const SECTION = 'hermetic:declaration';
export const MAX_DECLARATION_BYTES = 64 * 1024;
/** Core module instances a component may have when its declaration says nothing. */
export const DEFAULT_CORE_INSTANCES = 8;
/** The WIT package and world every tool targets. */
export const TOOL_PACKAGE = 'hermetic:tool@0.3.0';
const HERE = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------- wasm binary helpers

export function leb128(n) {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`leb128: bad value ${n}`);
  const out = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return Uint8Array.from(out);
}

export function readLeb(data, pos) {
  let result = 0;
  let mul = 1;
  for (;;) {
    if (pos >= data.length) throw new Error('truncated LEB128');
    const b = data[pos++];
    result += (b & 0x7f) * mul;
    mul *= 128;
    if (!(b & 0x80)) return [result, pos];
  }
}

function checkMagic(data) {
  if (data.length < 8 || data[0] !== 0 || data[1] !== 0x61 || data[2] !== 0x73 || data[3] !== 0x6d) {
    throw new Error('not WebAssembly (no \\0asm header)');
  }
}

/** Top-level sections of a module or component: [{id, start, end}] (start: the body). */
export function sections(data) {
  checkMagic(data);
  const out = [];
  let pos = 8;
  while (pos < data.length) {
    const id = data[pos];
    const [size, body] = readLeb(data, pos + 1);
    if (body + size > data.length) throw new Error('truncated section');
    out.push({ id, start: body, end: body + size });
    pos = body + size;
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function readName(data, pos) {
  const [len, p] = readLeb(data, pos);
  return [utf8.decode(data.subarray(p, p + len)), p + len];
}

/** Names of the top-level custom sections. */
export function customSectionNames(data) {
  return sections(data)
    .filter((s) => s.id === 0)
    .map((s) => readName(data, s.start)[0]);
}

/** `data` with a top-level custom section `hermetic:declaration` holding `toml` appended. */
export function appendDeclaration(data, toml) {
  data = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (customSectionNames(data).includes(SECTION)) {
    throw new Error(`the component already has a \`${SECTION}\` section`);
  }
  const payload = typeof toml === 'string' ? new TextEncoder().encode(toml) : toml;
  utf8.decode(payload); // throws unless UTF-8
  if (payload.length > MAX_DECLARATION_BYTES) {
    throw new Error(`the declaration is ${payload.length} bytes, over the host's ${MAX_DECLARATION_BYTES}-byte limit`);
  }
  const name = new TextEncoder().encode(SECTION);
  const body = concat([leb128(name.length), name, payload]);
  return concat([data, Uint8Array.of(0), leb128(body.length), body]);
}

/** The payload of the top-level declaration section, or null. */
export function readDeclaration(data) {
  for (const s of sections(data)) {
    if (s.id !== 0) continue;
    const [name, p] = readName(data, s.start);
    if (name === SECTION) return utf8.decode(data.subarray(p, s.end));
  }
  return null;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Core module instances a component creates (its own and nested components'). */
export function countCoreInstances(data) {
  let n = 0;
  for (const s of sections(data)) {
    if (s.id === 2) n += countInstantiations(data, s.start); // core:instance section
    else if (s.id === 4) n += countCoreInstances(data.subarray(s.start, s.end)); // nested component
  }
  return n;
}

// A core:instance section is a vec of `0x00 module args` (instantiates a module: what
// the host's pool counts) or `0x01 exports` (a bag of existing items: free).
function countInstantiations(data, p) {
  let [count, q] = readLeb(data, p);
  let n = 0;
  for (let i = 0; i < count; i++) {
    const kind = data[q++];
    if (kind === 0x00) {
      n++;
      q = readLeb(data, q)[1]; // moduleidx
      let args;
      [args, q] = readLeb(data, q);
      for (let j = 0; j < args; j++) {
        q = readName(data, q)[1];
        q = readLeb(data, q + 1)[1]; // 0x12 instanceidx
      }
    } else if (kind === 0x01) {
      let exps;
      [exps, q] = readLeb(data, q);
      for (let j = 0; j < exps; j++) {
        q = readName(data, q)[1];
        q = readLeb(data, q + 1)[1]; // sort byte, idx
      }
    } else {
      throw new Error(`unknown core instance kind ${kind}`);
    }
  }
  return n;
}

/** Names of a component's top-level imports (`wasi:http/types@0.2.x`, …). */
export function componentImports(data) {
  const names = [];
  for (const s of sections(data)) {
    if (s.id !== 10) continue;
    let [count, p] = readLeb(data, s.start);
    for (let i = 0; i < count; i++) {
      const kind = data[p++]; // 0x00 plain name, 0x01 interface name (older encoders)
      if (kind !== 0x00 && kind !== 0x01) throw new Error(`import name kind ${kind}`);
      let name;
      [name, p] = readName(data, p);
      names.push(name);
      p = skipExternDesc(data, p);
    }
  }
  return names;
}

function skipExternDesc(data, p) {
  const sort = data[p++];
  switch (sort) {
    case 0x00: // core module: 0x11 typeidx
      return readLeb(data, p + 1)[1];
    case 0x01: // func typeidx
    case 0x04: // component typeidx
    case 0x05: // instance typeidx
      return readLeb(data, p)[1];
    case 0x02: // value bound: 0x00 valueidx | 0x01 valtype
      return readLeb(data, p + 1)[1];
    case 0x03: // type bound: 0x00 eq typeidx | 0x01 sub resource
      return data[p] === 0x00 ? readLeb(data, p + 1)[1] : p + 1;
    default:
      throw new Error(`unknown extern sort ${sort}`);
  }
}

// ---------------------------------------------------------------- declaration and world

/** What the build needs from a parsed declaration, checked. */
export function buildPlan(decl) {
  if (!decl || typeof decl.name !== 'string' || !decl.name) throw new Error('declaration.toml: `name` is required');
  if (decl.hook) throw new Error('declaration.toml: hooks are not supported by this build (tools only)');
  if (typeof decl.toolset !== 'string' || !decl.toolset) throw new Error('declaration.toml: `toolset` is required');
  const caps = decl.capabilities ?? {};
  const network = caps.network ?? [];
  if (!Array.isArray(network)) throw new Error('declaration.toml: capabilities.network must be a list');
  const terminal = caps.terminal === true;
  const keyvalue = caps.keyvalue != null && caps.keyvalue !== false;
  const disableFeatures = ['stdio', 'fetch-event'];
  // wasi:http is linked only into tools that declare network destinations; a tool
  // importing it without is refused at load, so fetch() is compiled in only then.
  if (network.length === 0) disableFeatures.push('http');
  return { name: decl.name, network, terminal, keyvalue, disableFeatures, coreInstances: decl.core_instances };
}

/** The WIT package (its text) with the world `js-tool` the component is built for. */
export function worldWit({ terminal = false, keyvalue = false } = {}) {
  const [ns, rest] = TOOL_PACKAGE.split(':');
  const [pkg, version] = rest.split('@');
  const lines = [
    'package hermetic-build:js-tool;',
    '',
    'world js-tool {',
    `    include ${ns}:${pkg}/tool-component@${version};`,
  ];
  if (terminal) lines.push(`    import ${ns}:${pkg}/terminal@${version};`);
  if (keyvalue) lines.push(`    include ${ns}:${pkg}/keyvalue-imports@${version};`);
  lines.push('}', '');
  return lines.join('\n');
}

/** The directory holding tool.wit (see the header). */
export function findWitDir() {
  const candidates = [process.env.HERMETIC_WIT_DIR, join(HERE, 'wit'), join(HERE, '..', '..', 'wit')].filter(Boolean);
  for (const c of candidates) if (existsSync(join(c, 'tool.wit'))) return resolve(c);
  throw new Error(`no WIT found (looked for tool.wit in ${candidates.join(', ')}); set HERMETIC_WIT_DIR`);
}

/** Lays out DIR/world.wit and DIR/deps/ (the hermetic:tool package and its deps). */
async function writeWitDir(dir, witDir, plan) {
  await mkdir(join(dir, 'deps', 'hermetic-tool'), { recursive: true });
  await writeFile(join(dir, 'world.wit'), worldWit(plan));
  for (const f of await readdir(witDir)) {
    if (f.endsWith('.wit')) await cp(join(witDir, f), join(dir, 'deps', 'hermetic-tool', f));
  }
  if (existsSync(join(witDir, 'deps'))) {
    for (const d of await readdir(join(witDir, 'deps'))) {
      await cp(join(witDir, 'deps', d), join(dir, 'deps', d), { recursive: true });
    }
  }
}

/** The declaration text to embed: the author's, plus `core_instances` when needed. */
export function declarationToEmbed(text, plan, coreInstances) {
  if (coreInstances <= DEFAULT_CORE_INSTANCES || plan.coreInstances != null) return text;
  // Top-level keys must come before the first table: put it first.
  return `# added by build.mjs: the component creates ${coreInstances} core instances\ncore_instances = ${coreInstances}\n${text}`;
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

export async function build({ project, out, entry, typecheck = false, keepTemp = false, say = console.error }) {
  const t0 = Date.now();
  project = resolve(project);
  const declPath = join(project, 'declaration.toml');
  entry = chooseEntry(project, entry);
  const typescript = TS_SOURCE.test(entry);
  if (!existsSync(join(project, entry))) throw new Error(`${join(project, entry)}: not found (the tool's ES module)`);
  if (typecheck && !typescript) throw new Error(`--typecheck is for TypeScript projects (app.ts); the entry is ${entry}`);
  if (!existsSync(declPath)) throw new Error(`${declPath}: not found (every tool needs a declaration)`);
  const { parse } = await need('smol-toml', 'smol-toml');
  const declText = await readFile(declPath, 'utf8');
  let decl;
  try {
    decl = parse(declText);
  } catch (e) {
    throw new Error(`${declPath}: ${e.message}`);
  }
  const plan = buildPlan(decl);
  const ts = typescript ? await loadTypeScript() : null;
  const { componentize } = await need('@bytecodealliance/componentize-js', 'componentize-js');
  const witDir = findWitDir();

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
    const wit = join(tmp, 'wit');
    await writeWitDir(wit, witDir, plan);
    say(`[build] ${plan.name}: componentize-js (disabled: ${plan.disableFeatures.join(', ')}${plan.terminal ? '; + terminal' : ''}${plan.keyvalue ? '; + keyvalue' : ''})…`);
    // componentize-js maps the source's directory (or the cwd, when it contains it)
    // into the engine to resolve relative imports: work from the copy.
    process.chdir(src);
    const { component } = await componentize({
      sourcePath: join(src, entry),
      witPath: wit,
      worldName: 'js-tool',
      disableFeatures: plan.disableFeatures,
      enableAot: false,
    });
    process.chdir(cwd);
    const bytes = new Uint8Array(component);
    const imports = componentImports(bytes);
    if (plan.network.length === 0 && imports.some((i) => i.startsWith('wasi:http/'))) {
      throw new Error('the component imports wasi:http but the declaration declares no network: the host would refuse it');
    }
    const cores = countCoreInstances(bytes);
    const embedded = declarationToEmbed(declText, plan, cores);
    if (plan.coreInstances != null && plan.coreInstances < cores) {
      throw new Error(`declaration.toml says core_instances = ${plan.coreInstances} but the component creates ${cores}: the host would refuse it`);
    }
    const final = appendDeclaration(bytes, embedded);
    await mkdir(dirname(resolve(out)), { recursive: true });
    await writeFile(out, final);
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    say(`[build] wrote ${out}: ${final.length} bytes, ${cores} core instances, ${secs} s`);
    say(`[build] imports: ${imports.join(' ')}`);
    return { bytes: final.length, coreInstances: cores, imports, seconds: Number(secs) };
  } finally {
    process.chdir(cwd);
    if (keepTemp) say(`[build] kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
  }
}

function usage() {
  return 'usage: node build.mjs PROJECT_DIR -o OUT.wasm [--entry app.js|app.ts] [--typecheck] [--keep-temp]';
}

async function main(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-o' || a === '--out') opts.out = argv[++i];
    else if (a === '--entry') opts.entry = argv[++i];
    else if (a === '--keep-temp') opts.keepTemp = true;
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
