/**
 * OVOS-COMMON-QUERY-1 §4.2 measured on a labelled corpus (gate-corpus/<lang>.json): how many real questions the
 * question gate accepts (recall: a miss silently fails the user) and how many action commands it rejects (a miss
 * only costs one contest round-trip). The corpus is utterances as people say them to a voice assistant, written
 * before the gate was tuned: information requests of every shape are "question" (wh-questions, yes/no questions,
 * noun phrases such as "einstein birthday", "define …", "tell me about …"), anything that asks for an action is
 * "command" (plain, polite, wake-word-prefixed, or containing question words: "play what a wonderful world").
 *
 * Get the numbers: `npx vitest run --config test/vitest.config.ts test/plugins/common-query/gate-corpus.test.ts`
 * prints the per-language table.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type GateConfig } from '../../../src/config/defaults.js';
import { classifyQuestion } from '../../../src/plugins/common-query/gate.js';

export type Label = 'question' | 'command';
export interface CorpusItem {
  readonly text: string;
  readonly label: Label;
}

export interface GateMeasurement {
  readonly lang: string;
  readonly questions: number;
  readonly accepted: number;
  /** accepted / questions: the share of real questions that reach the contest. */
  readonly recall: number;
  readonly commands: number;
  readonly rejected: number;
  /** rejected / commands: the share of action commands the gate keeps out of the contest. */
  readonly rejection: number;
  /** Questions the gate rejected. */
  readonly missedQuestions: readonly string[];
  /** Commands the gate accepted. */
  readonly acceptedCommands: readonly string[];
}

/** Pure: classify every corpus item with `gate` and count. */
export function measureGate(
  lang: string,
  corpus: readonly CorpusItem[],
  gate: GateConfig = DEFAULT_CONFIG.commonQuery.gate,
): GateMeasurement {
  const questions = corpus.filter((item) => item.label === 'question');
  const commands = corpus.filter((item) => item.label === 'command');
  const accepts = (item: CorpusItem): boolean => classifyQuestion(item.text, lang, gate).accept;
  const missedQuestions = questions.filter((item) => !accepts(item)).map((item) => item.text);
  const acceptedCommands = commands.filter(accepts).map((item) => item.text);
  const accepted = questions.length - missedQuestions.length;
  const rejected = commands.length - acceptedCommands.length;
  return {
    lang,
    questions: questions.length,
    accepted,
    recall: questions.length === 0 ? 1 : accepted / questions.length,
    commands: commands.length,
    rejected,
    rejection: commands.length === 0 ? 1 : rejected / commands.length,
    missedQuestions,
    acceptedCommands,
  };
}

/** Pure: the measurements as a Markdown table. */
export function formatTable(rows: readonly GateMeasurement[]): string {
  const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
  return [
    '| language | questions | accepted | recall | commands | rejected | rejection |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) =>
      [r.lang, r.questions, r.accepted, pct(r.recall), r.commands, r.rejected, pct(r.rejection)].join(' | '),
    ).map((row) => `| ${row} |`),
  ].join('\n');
}

export const LANGUAGES = ['en', 'pt', 'es', 'fr', 'de'] as const;
/** §4.2 targets from the issue: ≥ 99 % of questions accepted, ≥ 90 % of commands rejected, per language. */
export const MIN_RECALL = 0.99;
export const MIN_REJECTION = 0.9;
/** Minimum corpus sizes from the issue. */
const MIN_ITEMS: Readonly<Record<string, number>> = { en: 300, pt: 60, es: 60, fr: 60, de: 60 };

export function loadCorpus(lang: string, set: 'tuning' | 'holdout' = 'tuning'): CorpusItem[] {
  const dir = set === 'tuning' ? './gate-corpus/' : './gate-corpus/holdout/';
  const url = new URL(`${dir}${lang}.json`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as CorpusItem[];
}

function misclassified(rows: readonly GateMeasurement[]): string {
  return rows
    .flatMap((r) => [
      ...r.missedQuestions.map((t) => `  ${r.lang}  question rejected: ${t}`),
      ...r.acceptedCommands.map((t) => `  ${r.lang}  command accepted: ${t}`),
    ])
    .join('\n');
}

function wellFormed(lang: string, corpus: readonly CorpusItem[], minItems: number): void {
  expect(corpus.length, lang).toBeGreaterThanOrEqual(minItems);
  for (const item of corpus) {
    expect(typeof item.text, `${lang}: ${JSON.stringify(item)}`).toBe('string');
    expect(['question', 'command'], `${lang}: ${JSON.stringify(item)}`).toContain(item.label);
  }
  const texts = corpus.map((item) => item.text);
  expect(texts.filter((t, i) => texts.indexOf(t) !== i), `${lang} duplicates`).toEqual([]);
  expect(corpus.some((item) => item.label === 'question'), lang).toBe(true);
  expect(corpus.some((item) => item.label === 'command'), lang).toBe(true);
}

/** The corpus the gate's rules and vocabulary were improved against; the targets are asserted on it. */
const MEASURED = new Map(LANGUAGES.map((lang) => [lang, measureGate(lang, loadCorpus(lang))]));
/**
 * Written after the gate was tuned and measured once, never tuned against: an estimate of how the rules
 * generalise. Reported, not asserted — asserting it would turn it into a second tuning set.
 */
const HOLDOUT = new Map(LANGUAGES.map((lang) => [lang, measureGate(lang, loadCorpus(lang, 'holdout'))]));

describe('question gate corpus, OVOS-COMMON-QUERY-1 §4.2', () => {
  it('OVOS-COMMON-QUERY-1 §4.2: the corpus is well formed (labelled, no duplicates, the sizes the issue asks for)', () => {
    for (const lang of LANGUAGES) wellFormed(lang, loadCorpus(lang), MIN_ITEMS[lang] ?? 0);
    for (const lang of LANGUAGES) wellFormed(`holdout ${lang}`, loadCorpus(lang, 'holdout'), 1);
    const tuning = [...MEASURED.values()];
    const holdout = [...HOLDOUT.values()];
    console.log(
      [
        'question gate on the labelled corpus (test/plugins/common-query/gate-corpus/<lang>.json):',
        formatTable(tuning),
        misclassified(tuning),
        '',
        'held-out corpus, never tuned against (test/plugins/common-query/gate-corpus/holdout/<lang>.json):',
        formatTable(holdout),
        misclassified(holdout),
      ].join('\n'),
    );
  });

  it.each(LANGUAGES)(
    `OVOS-COMMON-QUERY-1 §4.2 (MUST accept questions; when in doubt, accept): at least ${MIN_RECALL * 100} %% of the %s questions are accepted`,
    (lang) => {
      const m = MEASURED.get(lang);
      expect(m).toBeDefined();
      if (m === undefined) return;
      expect(
        m.recall,
        `${lang}: ${m.accepted}/${m.questions} questions accepted; rejected questions:\n  ${m.missedQuestions.join('\n  ')}`,
      ).toBeGreaterThanOrEqual(MIN_RECALL);
    },
  );

  it.each(LANGUAGES)(
    `OVOS-COMMON-QUERY-1 §4.2 (SHOULD NOT accept action commands): at least ${MIN_REJECTION * 100} %% of the %s commands are rejected`,
    (lang) => {
      const m = MEASURED.get(lang);
      expect(m).toBeDefined();
      if (m === undefined) return;
      expect(
        m.rejection,
        `${lang}: ${m.rejected}/${m.commands} commands rejected; accepted commands:\n  ${m.acceptedCommands.join('\n  ')}`,
      ).toBeGreaterThanOrEqual(MIN_REJECTION);
    },
  );
});
