// build.mjs's own parts: finding and running `hermetic` (which writes the WIT world
// and embeds the declaration), reading the world, choosing componentize-js features.
// No network, no componentize-js run; the host's commands run only when $HERMETIC
// names a built binary (.ci/run sets it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { disabledFeatures, hermeticCommand, runHermetic, worldImports, WORLD } from '../build.mjs';

const WORLD_TEXT = `package hermetic:tool-build;

world tool {
    include hermetic:tool/tool-component@0.3.0;
    import wasi:http/outgoing-handler@0.2.12;
    import wasi:http/types@0.2.12;
}
`;

test('worldImports reads the import lines, not the include', () => {
  assert.deepEqual(worldImports(WORLD_TEXT), ['wasi:http/outgoing-handler@0.2.12', 'wasi:http/types@0.2.12']);
  assert.deepEqual(worldImports('world tool {\n    include hermetic:tool/tool-component@0.3.0;\n}\n'), []);
});

test('disabledFeatures: fetch (http) only when the world imports wasi:http', () => {
  assert.deepEqual(disabledFeatures([]), ['stdio', 'fetch-event', 'http']);
  assert.deepEqual(disabledFeatures(['hermetic:tool/terminal@0.3.0']), ['stdio', 'fetch-event', 'http']);
  assert.deepEqual(disabledFeatures(worldImports(WORLD_TEXT)), ['stdio', 'fetch-event']);
});

test('hermetic is $HERMETIC, else the one on PATH', () => {
  assert.equal(hermeticCommand({}), 'hermetic');
  assert.equal(hermeticCommand({ HERMETIC: '/opt/hermetic/bin/hermetic' }), '/opt/hermetic/bin/hermetic');
});

test('a missing or failing hermetic is an error that says what to do', () => {
  assert.throws(
    () => runHermetic(['tool', 'world', 'declaration.toml'], { hermetic: '/nonexistent/hermetic' }),
    /the hermetic command was not found \(\/nonexistent\/hermetic\).*set HERMETIC=/,
  );
  const dir = mkdtempSync(join(tmpdir(), 'build-test-'));
  try {
    const fake = join(dir, 'hermetic');
    writeFileSync(fake, '#!/bin/sh\necho "error: declaration.toml: declaration is not valid: unknown field" >&2\nexit 3\n', { mode: 0o755 });
    assert.throws(
      () => runHermetic(['tool', 'world', 'declaration.toml'], { hermetic: fake }),
      /^Error: hermetic tool world: declaration.toml: declaration is not valid: unknown field$/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the host writes the world build.mjs uses', { skip: !process.env.HERMETIC && 'set HERMETIC to a built hermetic' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'build-test-'));
  try {
    const decl = join(dir, 'declaration.toml');
    writeFileSync(decl, 'name = "t"\ntoolset = "t"\n[capabilities]\nterminal = true\n');
    runHermetic(['tool', 'world', decl, '--out', join(dir, 'wit')]);
    const text = readFileSync(join(dir, 'wit', 'world.wit'), 'utf8');
    assert.match(text, new RegExp(`world ${WORLD} \\{`));
    assert.deepEqual(worldImports(text), ['hermetic:tool/terminal@0.3.0']);
    writeFileSync(decl, 'name = "t"\ntoolset = "t"\ngrant_all = true\n');
    assert.throws(() => runHermetic(['tool', 'world', decl]), /unknown field `grant_all`/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
