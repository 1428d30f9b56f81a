// {{name}}: a hermetic tool in JavaScript. Build: `npm run build` (writes {{name}}.wasm).
// `handle` gets the parsed arguments and {callId, tenant, session}; return any
// JSON-able value (or a Promise of one: `fetch()` works when declaration.toml declares
// network destinations and the operator grants them). Throw a ToolError for an error
// the agent should see.
import { defineTool, ToolError, log } from './hermetic-tool.js';

export const tool = defineTool({
  schema: {
    name: '{{name}}',
    description: 'Greets someone.',
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Who to greet.' },
      },
      required: ['name'],
    },
  },
  handle({ name }, ctx) {
    if (typeof name !== 'string' || !name) throw new ToolError('`name` must be a non-empty string');
    log('info', `greeting ${name} (call ${ctx.callId})`);
    return { greeting: `Hello, ${name}!` };
  },
});
