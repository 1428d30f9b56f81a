// text_stats_js: word, line and character counts and the most frequent words.
// Pure compute, no capabilities.
import { defineTool, ToolError, progress } from './hermetic-tool.js';

const MAX_TOP = 50;

export const tool = defineTool({
  schema: {
    name: 'text_stats_js',
    description: 'Count the words, lines and characters of a text and list its most frequent words.',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The text to analyse.' },
        top: { type: 'integer', description: `How many of the most frequent words to list (0-${MAX_TOP}, default 10).` },
      },
      required: ['text'],
    },
  },
  handle({ text, top = 10 }) {
    if (typeof text !== 'string') throw new ToolError('`text` must be a string');
    if (!Number.isInteger(top) || top < 0 || top > MAX_TOP) throw new ToolError(`\`top\` must be an integer from 0 to ${MAX_TOP}`);
    // Words: runs of anything but whitespace and punctuation. (No \p{…} classes:
    // the engine is built without Unicode property tables.)
    const words = text.toLowerCase().split(/[\s.,;:!?"()[\]{}<>\/\\|*&^%$#@~`+=_\u2013\u2014\u00ab\u00bb-]+/).filter(Boolean);
    const counts = new Map();
    for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
    progress(1, 1, `${words.length} words`);
    const topWords = [...counts.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([word, count]) => ({ word, count }));
    return {
      characters: [...text].length,
      lines: text === '' ? 0 : text.split(/\r\n|\r|\n/).length,
      words: words.length,
      unique_words: counts.size,
      top_words: topWords,
    };
  },
});
