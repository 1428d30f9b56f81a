// build.mjs's pure parts: the declaration section appender, the binary readers, the
// WIT world and the build plan. No network, no componentize-js run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendDeclaration, buildPlan, componentImports, countCoreInstances, customSectionNames,
  declarationToEmbed, leb128, readDeclaration, readLeb, MAX_DECLARATION_BYTES, SECTION, worldWit,
} from '../build.mjs';

const COMPONENT_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
const bytes = (...parts) => Uint8Array.from(parts.flat());
const str = (s) => { const b = [...new TextEncoder().encode(s)]; return [...leb128(b.length), ...b]; };
const section = (id, body) => [id, ...leb128(body.length), ...body];

test('leb128 round trip', () => {
  for (const n of [0, 1, 127, 128, 300, 16384, 65535, 2 ** 32 + 5]) {
    const enc = leb128(n);
    assert.deepEqual(readLeb(enc, 0), [n, enc.length]);
  }
  assert.deepEqual([...leb128(624485)], [0xe5, 0x8e, 0x26]);
  assert.throws(() => leb128(-1));
});

test('appendDeclaration round trip, keeping other sections', () => {
  const base = bytes(COMPONENT_HEADER, section(0, str('other')));
  const toml = 'name = "x"\ntoolset = "t"\ndescription = "é ✓"\n';
  const out = appendDeclaration(base, toml);
  assert.deepEqual(out.subarray(0, base.length), base);
  assert.deepEqual(customSectionNames(out), ['other', SECTION]);
  assert.equal(readDeclaration(out), toml);
  assert.equal(readDeclaration(base), null);
});

test('appendDeclaration refuses a second section, oversized and non-UTF-8 payloads, non-wasm', () => {
  const once = appendDeclaration(bytes(COMPONENT_HEADER), 'name = "x"\n');
  assert.throws(() => appendDeclaration(once, 'name = "y"\n'), /already has/);
  assert.throws(() => appendDeclaration(bytes(COMPONENT_HEADER), 'x'.repeat(MAX_DECLARATION_BYTES + 1)), /over the host's/);
  assert.ok(appendDeclaration(bytes(COMPONENT_HEADER), 'x'.repeat(MAX_DECLARATION_BYTES)));
  assert.throws(() => appendDeclaration(bytes(COMPONENT_HEADER), Uint8Array.of(0xff, 0xfe)));
  assert.throws(() => appendDeclaration(bytes([1, 2, 3, 4, 5, 6, 7, 8]), 'x'), /not WebAssembly/);
  assert.throws(() => appendDeclaration(bytes(COMPONENT_HEADER, [0, 50, 1]), 'x'), /truncated/);
});

test('countCoreInstances counts instantiations, not export bags, nested too', () => {
  // core:instance section: 3 entries: instantiate module 0 (no args), an export bag
  // with one export, instantiate module 1 with one arg.
  const inst = section(2, [3, 0x00, 0, 0, 0x01, 1, ...str('f'), 0x00, 0, 0x00, 1, 1, ...str('env'), 0x12, 1]);
  const nested = section(4, [...COMPONENT_HEADER, ...section(2, [1, 0x00, 0, 0])]);
  assert.equal(countCoreInstances(bytes(COMPONENT_HEADER, inst, nested)), 3);
  assert.equal(countCoreInstances(bytes(COMPONENT_HEADER)), 0);
});

test('componentImports reads import names', () => {
  // import section: two instance imports (sort 0x05, typeidx) and one func (0x01).
  const imp = section(10, [3, 0x00, ...str('wasi:http/types@0.2.10'), 0x05, 0, 0x00, ...str('hermetic:tool/host@0.3.0'), 0x05, 1, 0x00, ...str('f'), 0x01, 2]);
  assert.deepEqual(componentImports(bytes(COMPONENT_HEADER, imp)), ['wasi:http/types@0.2.10', 'hermetic:tool/host@0.3.0', 'f']);
});

test('worldWit includes the tool world and only the imports asked for', () => {
  const plain = worldWit({});
  assert.match(plain, /^package hermetic-build:js-tool;/);
  assert.match(plain, /world js-tool \{\n    include hermetic:tool\/tool-component@0\.3\.0;\n\}/);
  assert.doesNotMatch(plain, /terminal|keyvalue/);
  const term = worldWit({ terminal: true });
  assert.match(term, /import hermetic:tool\/terminal@0\.3\.0;/);
  assert.match(worldWit({ keyvalue: true }), /include hermetic:tool\/keyvalue-imports@0\.3\.0;/);
});

test('buildPlan: http only with network; name and toolset required; no hooks', () => {
  assert.deepEqual(buildPlan({ name: 'a', toolset: 't' }).disableFeatures, ['stdio', 'fetch-event', 'http']);
  const net = buildPlan({ name: 'a', toolset: 't', capabilities: { network: ['https://x.example'], terminal: true } });
  assert.deepEqual(net.disableFeatures, ['stdio', 'fetch-event']);
  assert.equal(net.terminal, true);
  assert.equal(buildPlan({ name: 'a', toolset: 't', capabilities: { keyvalue: 'session' } }).keyvalue, true);
  assert.throws(() => buildPlan({ toolset: 't' }), /name/);
  assert.throws(() => buildPlan({ name: 'a' }), /toolset/);
  assert.throws(() => buildPlan({ name: 'a', toolset: 't', hook: {} }), /hooks/);
});

test('declarationToEmbed adds core_instances only above the default and when not declared', () => {
  const text = 'name = "a"\ntoolset = "t"\n[capabilities]\nterminal = true\n';
  assert.equal(declarationToEmbed(text, { coreInstances: undefined }, 4), text);
  const more = declarationToEmbed(text, { coreInstances: undefined }, 12);
  assert.match(more, /^# added by build\.mjs.*\ncore_instances = 12\nname = "a"/);
  assert.equal(declarationToEmbed(text, { coreInstances: 20 }, 12), text);
});
