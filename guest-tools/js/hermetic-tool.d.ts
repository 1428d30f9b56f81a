// Types for hermetic-tool.js (TypeScript tools: `import { defineTool } from './hermetic-tool.js'`).
// build.mjs copies this file beside the app with hermetic-tool.js.

/** Any value JSON.stringify turns into JSON text. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON Schema (the `parameters` of an OpenAI function schema). */
export interface JsonSchema {
  type?: 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null' | Array<'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null'>;
  description?: string;
  properties?: { [name: string]: JsonSchema };
  required?: string[];
  items?: JsonSchema | JsonSchema[];
  enum?: JsonValue[];
  additionalProperties?: boolean | JsonSchema;
  [keyword: string]: unknown;
}

/** The tool's schema: an OpenAI function schema. */
export interface ToolSchema {
  /** The tool's name, as the agent calls it (and as `name` in declaration.toml). */
  name: string;
  description?: string;
  parameters?: JsonSchema;
  [key: string]: unknown;
}

/** Who is calling: every field is a string, empty when the host sent none. */
export interface ToolContext {
  callId: string;
  tenant: string;
  session: string;
}

/** The arguments as parsed from the call's JSON text (an object when the schema says so). */
export type ToolArgs = { [key: string]: any };

/** What `defineTool` takes. `A` types the arguments; the host does not validate them against the schema. */
export interface ToolSpec<A = ToolArgs> {
  /** The schema, as an object or as JSON text. It must have a non-empty `name`. */
  schema: ToolSchema | string;
  /** May the tool work now (e.g. is its env var granted)? Default: true. A throw is false. */
  check?(): unknown;
  /**
   * One call. Returns (or resolves to) any JSON-able value; `undefined` becomes `null`.
   * A throw or a rejection is the call's error: the Error's message only.
   */
  handle(args: A, ctx: ToolContext): unknown;
}

/** The `tool` export (the WIT interface `hermetic:tool/tool@0.3.0`): export it as `tool`. */
export interface Tool {
  /** The schema as JSON text. */
  schema(): string;
  check(): boolean;
  /** Args and result are JSON text; an error is thrown as a string. */
  handle(args: string, ctx: { callId?: string; tenant?: string; session?: string } | undefined): string | Promise<string>;
}

/** The `tool` export for a spec. Throws a TypeError if `handle` is missing or the schema has no name. */
export function defineTool<A = ToolArgs>(spec: ToolSpec<A>): Tool;

/** An error whose message the caller (the agent) gets as the tool's error. */
export class ToolError extends Error {
  constructor(message: string);
}

/** The error string for anything thrown: an Error's message, else the value as text. */
export function errorMessage(e: unknown): string;

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** A log record attributed to this tool by the host. Level is case-insensitive; an unknown one is `info`. */
export function log(level: LogLevel | Uppercase<LogLevel> | (string & {}), message: unknown): void;

/** Progress of the current call: `done` of `total` (null/undefined when unknown). Negative values are 0. */
export function progress(done: number | bigint, total?: number | bigint | null, message?: unknown): void;
