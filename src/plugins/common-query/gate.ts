/**
 * The question gate, OVOS-COMMON-QUERY-1 §4: a cheap accept/reject pre-filter that skips the contest's broadcast
 * cost for utterances that are plainly not questions. The confidence filter (§8) stays the quality gate; the gate
 * only saves latency, so every doubtful case is accepted (§4.2 "when in doubt, accept"). It never scores (§4.1).
 *
 * Rules, first match wins:
 *  1. `enabled: false` → accept (`gate_disabled`).
 *  2. The vocabulary is looked up by primary language subtag, lowercased (`en-US`, `EN_gb` → `en`). A language
 *     with no vocabulary → accept (`unknown_language`): we cannot tell, so we do not refuse (§4.2).
 *  3. The raw text ends with a question mark (`?`, `？`, `؟`, trailing quotes/brackets ignored) or opens with `¿`
 *     → accept (`question_mark`). Checked before punctuation is stripped.
 *  4. Normalise: NFKC, lowercase, punctuation (apostrophes and hyphens included) becomes a space, whitespace is
 *     collapsed. Vocabulary phrases are normalised the same way, so `qu'est-ce que` matches `Qu'est-ce que`.
 *     Phrases match whole words only, so `light` never matches `lights`. Nothing left → reject (`too_short`).
 *  5. The utterance starts with a `question` phrase ("what", "tell me about") → accept (`question_word`).
 *  6. Yes/no inversion (built-in {@link YES_NO}; vocabulary lists carry no grammar, GateConfig is not widened).
 *     The utterance starts with an auxiliary ("is", "do", "can" …):
 *      a. auxiliary + a word it cannot agree with as its subject ("do a …", "have it …" — a question would need
 *         "does"/"has") → the auxiliary is the main verb of an imperative → reject (`command_word`).
 *         This is what rejects "do a barrel roll" while "does a cat have nine lives" passes.
 *      b. auxiliary + subject word (pronoun or determiner) + a `command` word → a polite request ("can you play
 *         music", "could you set a timer") → reject (`command_word`).
 *      c. auxiliary + subject word + at least one more word → accept (`question_word`).
 *     Otherwise (e.g. "is paris the capital of france") no verdict yet: the later rules decide.
 *     A single-word `question` phrase that is one of the language's auxiliaries is governed by this rule, not by
 *     rules 5, 8 and 9, so a vocabulary that still lists "do" does not make "do a barrel roll" a question.
 *  7. The utterance starts with a `command` phrase → reject (`command_word`).
 *  8. It contains a `command` phrase and no `question` phrase anywhere → reject (`command_word`).
 *  9. Fewer than `minWords` words and no `question` phrase anywhere → reject (`too_short`).
 * 10. Otherwise accept (`unsure_accept`).
 *
 * Accepted on purpose (over-acceptance costs one round-trip, under-acceptance fails the user, §4.2): "play music?"
 * (rule 3), "can you please play music" (rule 6c: "please" is not a command word), plain statements of three or
 * more words with no command word (rule 10).
 */
import type { GateConfig } from '../../config/defaults.js';

export type GateVerdict = {
  readonly accept: boolean;
  readonly reason:
    | 'gate_disabled'
    | 'question_word'
    | 'command_word'
    | 'too_short'
    | 'unknown_language'
    | 'unsure_accept'
    | 'question_mark';
};

interface YesNoGrammar {
  /** Verbs that open a yes/no question by subject-auxiliary inversion. */
  readonly auxiliaries: readonly string[];
  /** Words that can begin the inverted subject: pronouns, determiners, quantifiers. */
  readonly subjects: readonly string[];
  /** Auxiliary → words it cannot take as an inverted subject; the pair can only be an imperative (rule 6a). */
  readonly imperative: Readonly<Record<string, readonly string[]>>;
}

/** Non-agreeing followers of "do"/"have": third-person singular, which would need "does"/"has". */
const EN_SINGULAR = ['a', 'an', 'this', 'that', 'it', 'he', 'she', 'one', 'something', 'everything', 'nothing'];

/** Rule 6. Languages without an entry (pt, es, fr: yes/no questions are intonation or `est-ce que`) skip it. */
export const YES_NO: Readonly<Record<string, YesNoGrammar>> = {
  en: {
    auxiliaries: [
      'is', 'are', 'am', 'was', 'were', 'do', 'does', 'did', 'has', 'have', 'had', 'can', 'could', 'will',
      'would', 'shall', 'should', 'may', 'might', 'must',
    ],
    subjects: [
      'i', 'you', 'he', 'she', 'it', 'we', 'they', 'there', 'this', 'that', 'these', 'those', 'the', 'a', 'an',
      'my', 'your', 'his', 'her', 'its', 'our', 'their', 'any', 'some', 'all', 'every', 'each', 'no', 'one',
      'anyone', 'anybody', 'someone', 'somebody', 'everyone', 'everybody', 'anything', 'something', 'people',
    ],
    imperative: { do: EN_SINGULAR, have: EN_SINGULAR },
  },
  de: {
    auxiliaries: [
      'ist', 'sind', 'bist', 'war', 'waren', 'hat', 'haben', 'hast', 'hatte', 'kann', 'kannst', 'können',
      'konnte', 'könnte', 'könntest', 'wird', 'werden', 'gibt', 'gab', 'weißt', 'kennst', 'darf', 'muss', 'soll',
      'stimmt',
    ],
    subjects: [
      'der', 'die', 'das', 'den', 'dem', 'des', 'ein', 'eine', 'einen', 'es', 'er', 'sie', 'du', 'ihr', 'wir',
      'ich', 'man', 'mein', 'meine', 'dein', 'deine', 'dieser', 'diese', 'dieses', 'jemand',
    ],
    imperative: {},
  },
};

type Words = readonly string[];

const PUNCTUATION = /\p{P}+/gu;
/** Closing quotes and brackets that may follow a final question mark. */
const TRAILING_CLOSERS = /[\s"'’”»)\]}]+$/u;

function words(text: string): Words {
  return text.normalize('NFKC').toLowerCase().replace(PUNCTUATION, ' ').split(/\s+/u).filter((w) => w !== '');
}

function hasQuestionMark(utterance: string): boolean {
  const text = utterance.normalize('NFKC').trim();
  return text.startsWith('¿') || /[?؟]$/u.test(text.replace(TRAILING_CLOSERS, ''));
}

function startsWith(utterance: Words, phrase: Words, at = 0): boolean {
  return phrase.length > 0 && phrase.every((word, i) => utterance[at + i] === word);
}

function contains(utterance: Words, phrase: Words): boolean {
  for (let at = 0; at + phrase.length <= utterance.length; at++) {
    if (startsWith(utterance, phrase, at)) return true;
  }
  return false;
}

function accept(reason: GateVerdict['reason']): GateVerdict {
  return { accept: true, reason };
}

function reject(reason: GateVerdict['reason']): GateVerdict {
  return { accept: false, reason };
}

/** Rule 6: a verdict for an auxiliary-initial utterance, or null when the inversion test is inconclusive. */
function yesNo(utterance: Words, grammar: YesNoGrammar, commands: readonly Words[]): GateVerdict | null {
  const [first, second] = utterance;
  if (first === undefined || second === undefined || !grammar.auxiliaries.includes(first)) return null;
  if (grammar.imperative[first]?.includes(second) === true) return reject('command_word');
  if (!grammar.subjects.includes(second) || utterance.length < 3) return null;
  if (commands.some((command) => startsWith(utterance, command, 2))) return reject('command_word');
  return accept('question_word');
}

/** OVOS-COMMON-QUERY-1 §4: should the contest run for this utterance? Pure; see the header for the rules. */
export function classifyQuestion(utterance: string, lang: string, gate: GateConfig): GateVerdict {
  if (!gate.enabled) return accept('gate_disabled');

  const primary = (lang.split(/[-_]/u)[0] ?? '').toLowerCase();
  const vocabulary = Object.hasOwn(gate.vocabulary, primary) ? gate.vocabulary[primary] : undefined;
  if (vocabulary === undefined) return accept('unknown_language');

  if (hasQuestionMark(utterance)) return accept('question_mark');

  const text = words(utterance);
  if (text.length === 0) return reject('too_short');

  const grammar = Object.hasOwn(YES_NO, primary) ? YES_NO[primary] : undefined;
  const auxiliaries = grammar?.auxiliaries ?? [];
  const questions = vocabulary.question
    .map(words)
    .filter((phrase) => !(phrase.length === 1 && auxiliaries.includes(phrase[0] ?? '')));
  const commands = vocabulary.command.map(words);

  if (questions.some((phrase) => startsWith(text, phrase))) return accept('question_word');

  const inverted = grammar === undefined ? null : yesNo(text, grammar, commands);
  if (inverted !== null) return inverted;

  const asks = questions.some((phrase) => contains(text, phrase));
  if (commands.some((phrase) => startsWith(text, phrase))) return reject('command_word');
  if (!asks && commands.some((phrase) => contains(text, phrase))) return reject('command_word');
  if (!asks && text.length < gate.minWords) return reject('too_short');
  return accept('unsure_accept');
}
