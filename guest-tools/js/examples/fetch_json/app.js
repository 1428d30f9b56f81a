// fetch_json_js: GET a JSON document with fetch() and return it, or some of its
// top-level fields. fetch() goes through the host's wasi:http, so only destinations
// the declaration names and the operator grants are reachable.
import { defineTool, ToolError, log } from './hermetic-tool.js';

const MAX_BODY_BYTES = 256 * 1024;

async function readCapped(res, cap) {
  // Stream the body and stop at the cap rather than buffering whatever the server sends.
  const reader = res.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > cap) {
      await reader.cancel();
      throw new ToolError(`response body is over ${cap} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    all.set(c, o);
    o += c.length;
  }
  return new TextDecoder().decode(all);
}

export const tool = defineTool({
  schema: {
    name: 'fetch_json_js',
    description: 'GET a JSON URL and return the parsed body, or only the listed top-level keys.',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', description: 'The https URL of a JSON document, e.g. https://api.github.com/repos/bytecodealliance/wasmtime' },
        pick: { type: 'array', items: { type: 'string' }, description: 'Top-level keys to return (default: the whole body).' },
      },
      required: ['url'],
    },
  },
  async handle({ url, pick }) {
    let u;
    try {
      u = new URL(url);
    } catch {
      throw new ToolError(`not a URL: ${url}`);
    }
    if (pick !== undefined && !(Array.isArray(pick) && pick.every((k) => typeof k === 'string'))) {
      throw new ToolError('`pick` must be a list of strings');
    }
    log('info', `GET ${u.origin}${u.pathname}`);
    let res;
    try {
      res = await fetch(u.href, { headers: { accept: 'application/json', 'user-agent': 'hermetic-fetch-json-js' } });
    } catch (e) {
      throw new ToolError(`request failed: ${e.message}`);
    }
    const text = await readCapped(res, MAX_BODY_BYTES);
    if (!res.ok) throw new ToolError(`HTTP ${res.status}: ${text.slice(0, 200)}`);
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new ToolError(`the response is not JSON: ${e.message}`);
    }
    if (!pick) return { status: res.status, body };
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ToolError('`pick` needs a JSON object body');
    const picked = {};
    for (const k of pick) if (Object.hasOwn(body, k)) picked[k] = body[k];
    return { status: res.status, body: picked };
  },
});
