/**
 * Pretty logs in a terminal (src/log/logger.ts): what a skill id or an utterance carries — a C1 control such as
 * U+009B (a control sequence, as ESC [ starts one), a bidirectional override, a line separator — is shown escaped,
 * never acted on by the terminal; pino-pretty's own colours still are.
 */
import { describe, expect, it } from 'vitest';
import { createLogger, escapeForTerminal } from '../../src/log/logger.js';

describe('pretty logs escape what a terminal would act on', () => {
  it('a skill id with U+009B, U+202E, U+2066 and U+2028 is printed as \\uXXXX; the line keeps its colours and the rest', () => {
    let out = '';
    const logger = createLogger({ level: 'info', pretty: true, write: (text) => (out += text) });
    logger.info({ skill_id: 'evil\u009b2J\u202edi.lliks\u2066x\u2028y', utterance: 'tab\there' }, 'fallback skill registered');
    logger.flush();
    expect(out).toContain('fallback skill registered');
    expect(out).toContain('evil\\u009b2J\\u202edi.lliks\\u2066x\\u2028y');
    expect(out).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(out).toContain('\u001b['); // pino-pretty's colours
  });

  it('escapeForTerminal keeps newlines, tabs and ESC, and escapes every other C0 and C1 control and bidi mark', () => {
    expect(escapeForTerminal('a\nb\tc\u001b[31md')).toBe('a\nb\tc\u001b[31md');
    expect(escapeForTerminal('\u0007\u007f\u0085\u200f\u061c\u2069')).toBe('\\u0007\\u007f\\u0085\\u200f\\u061c\\u2069');
  });
});
