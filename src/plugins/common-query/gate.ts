/**
 * The question gate, OVOS-COMMON-QUERY-1 §4: a cheap accept/reject pre-filter that skips the contest's broadcast
 * cost for utterances that are plainly not questions. The confidence filter (§8) stays the quality gate; the gate
 * only saves latency, so every doubtful case is accepted (§4.2 "when in doubt, accept"). It never scores (§4.1).
 * "Question" means any information request: wh-questions, yes/no questions, "tell me about …", and bare noun
 * phrases such as "einstein birthday" or "volume of a sphere". Measured on a labelled corpus, per language:
 * test/plugins/common-query/gate-corpus.test.ts.
 *
 * Rules, first match wins:
 *  1. `enabled: false` → accept (`gate_disabled`).
 *  2. The vocabulary is looked up by primary language subtag, lowercased (`en-US`, `EN_gb` → `en`). A language
 *     with no vocabulary → accept (`unknown_language`): we cannot tell, so we do not refuse (§4.2).
 *  3. The raw text ends with a question mark (`?`, `？`, `؟`, trailing quotes/brackets ignored) or opens with `¿`
 *     → accept (`question_mark`). Checked before punctuation is stripped.
 *  4. Normalise: NFKC, lowercase, punctuation (apostrophes and hyphens included) becomes a space, whitespace is
 *     collapsed. Vocabulary phrases are normalised the same way, so `qu'est-ce que` matches `Qu'est-ce que`.
 *     Phrases match whole words only, so `light` never matches `lights`.
 *  5. Framing is stripped (built-in {@link FRAMING}, per language): wake words, greetings, politeness and fillers
 *     at the start ("hey mycroft", "ok", "please", "excuse me"), politeness, thanks and vocatives at the end
 *     ("please", "thanks", "mate"). Nothing left ("hello", "thanks mate") → reject (`too_short`).
 *  6. The opening decides, the longest phrase at the start wins, ties going to the question:
 *      a. a `question` phrase ("what", "tell me about") → accept (`question_word`);
 *      b. a `command` phrase ("play", "turn", "tell me a joke" beats "tell me") → reject (`command_word`);
 *      c. a request frame ("can you", "could you", "i want to", "peux-tu", "kannst du"): what follows it (politeness
 *         stripped again) is a command — it opens with a command phrase or an imperative auxiliary (7a), or, in a
 *         verb-final language (de) and with no `question` phrase in it, closes with the infinitive of a one-word
 *         command ("spiel" → "abspielen") — → reject (`command_word`). Otherwise no verdict: "can you tell me …"
 *         goes on to the rules below;
 *      d. an order frame ("i want you to", "quero que", "je veux que tu"): as 6c, and also reject (`command_word`)
 *         unless what follows contains a `question` phrase ("i want you to tell me who …").
 *     A one-word command phrase with a noun reading is no command here or in rule 8: one that is a noun in this
 *     language (English: every command word, since an imperative never takes "of") directly followed by a link
 *     word ("of", "de", "du", "von") that is not followed by a number ("volume of a sphere", "call of duty",
 *     "volume d'une sphère", but "temporizador de cinco minutos" is a command), or preceded by a link word within
 *     two words ("vitesse de la lumière").
 *  7. Yes/no inversion (built-in {@link YES_NO}; vocabulary lists carry no grammar, GateConfig is not widened).
 *     The utterance starts with an auxiliary ("is", "do", "can" …):
 *      a. auxiliary + a word it cannot agree with as its subject ("do a …", "have it …" — a question would need
 *         "does"/"has") → the auxiliary is the main verb of an imperative → reject (`command_word`).
 *         This is what rejects "do a barrel roll" (and, after rule 5, "please do a barrel roll") while
 *         "does a cat have nine lives" passes.
 *      b. otherwise, with at least two more words → accept: `question_word` when the next word is a subject word
 *         (pronoun or determiner: "is the volume of the sun huge"), `unsure_accept` when it is not ("was call of
 *         duty released in 2003", "is paris the capital of france"). Command words later in the sentence do not
 *         matter: "can i stop taking antibiotics early", "did michael jackson play the piano". Polite requests
 *         ("can you play music") were already rejected by rule 6c.
 *     A single-word `question` phrase that is one of the language's auxiliaries is governed by this rule, not by
 *     rules 6a and 8, so a vocabulary that still lists "do" does not make "do a barrel roll" a question.
 *  8. It contains a `command` phrase (noun readings excepted) and no `question` phrase anywhere → reject
 *     (`command_word`): "the lights please", "bedroom lights off", "5 minute timer", "licht aus".
 *  9. Fewer than `minWords` words (after rule 5) and no `question` phrase anywhere → reject (`too_short`). The
 *     default is 1: a one-word query ("weather", "lichtgeschwindigkeit") may be a question (§4.2).
 * 10. Otherwise accept (`unsure_accept`): statements and noun phrases ("einstein birthday", "population of tokyo").
 *
 * Accepted on purpose (over-acceptance costs one round-trip, under-acceptance fails the user, §4.2): "play music?"
 * (rule 3), "can you see the lights from space" (rules 6c, 7b), plain statements and noun phrases (rule 10),
 * and whatever a command vocabulary does not name. Known misses, kept because the fix would reject more real
 * questions than it saves: a question shaped like a request ("can you turn a fridge into a freezer", "remind me
 * who wrote hamlet") is rejected; a bare "next" is accepted.
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
  /** Auxiliary → words it cannot take as an inverted subject (rule 7a); a Map: a word never reads Object.prototype. */
  readonly imperative: ReadonlyMap<string, readonly string[]>;
}

/** Non-agreeing followers of "do"/"have": third-person singular, which would need "does"/"has". */
const EN_SINGULAR = ['a', 'an', 'this', 'that', 'it', 'he', 'she', 'one', 'something', 'everything', 'nothing'];

/** Rule 7. Languages without an entry (pt, es, fr: yes/no questions are intonation or `est-ce que`) skip it. */
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
    imperative: new Map([['do', EN_SINGULAR], ['have', EN_SINGULAR]]),
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
    imperative: new Map(),
  },
};

/**
 * How people wrap what they say to an assistant (rules 5, 6c, 6d and the noun reading of rule 6). Built in like
 * {@link YES_NO}: these are phrasing conventions, not the deployment's command/question vocabulary.
 */
interface Framing {
  /** Rule 5: stripped from the start, repeatedly: wake words, greetings, politeness, fillers. */
  readonly openers: readonly string[];
  /** Rule 5: stripped from the end, repeatedly: politeness, thanks, vocatives. */
  readonly closers: readonly string[];
  /** Rule 6c: "can you …" — a command exactly when what follows is one. */
  readonly requests: readonly string[];
  /** Rule 6d: "i want you to …" — a command unless what follows asks something. */
  readonly orders: readonly string[];
  /** Noun reading: "of" words. */
  readonly links: readonly string[];
  /** Noun reading: the command words that are also nouns; `'*'` = all of them. */
  readonly nouns: readonly string[] | '*';
  /** Noun reading: number words (digits always count) — "timer of five minutes" is a setting, not a property. */
  readonly numbers: readonly string[];
  /** Rule 6c, verb-final languages: endings that make a one-word command's infinitive ("spiel" + "en"). */
  readonly infinitive?: readonly string[];
}

const WAKE = ['hey mycroft', 'hi mycroft', 'hello mycroft', 'ok mycroft', 'okay mycroft', 'mycroft'];

export const FRAMING: Readonly<Record<string, Framing>> = {
  en: {
    openers: [
      ...WAKE, 'hey', 'hi', 'hello', 'ok', 'okay', 'alright', 'yes', 'yeah', 'no', 'please', 'kindly', 'just',
      'so', 'and', 'oh', 'um', 'umm', 'uh', 'er', 'excuse me', 'sorry', 'thanks', 'thank you', 'cheers',
      'go ahead and',
    ],
    closers: ['please', 'thanks', 'thank you', 'cheers', 'mycroft', 'mate', 'buddy'],
    requests: [
      'can you', 'can u', 'could you', 'would you', 'will you', 'i want to', 'i wanna', 'i would like to',
      "i'd like to", "let's",
    ],
    orders: ['i want you to', 'i need you to', "i'd like you to", 'i would like you to'],
    links: ['of'],
    nouns: '*',
    numbers: [
      'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'fifteen',
      'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'ninety', 'hundred', 'half',
    ],
  },
  pt: {
    openers: [
      ...WAKE, 'ei mycroft', 'olá mycroft', 'oi mycroft', 'ei', 'olá', 'oi', 'ok', 'por favor', 'se faz favor',
      'faz favor', 'então', 'obrigado', 'obrigada', 'bom dia', 'boa tarde', 'boa noite',
    ],
    closers: ['por favor', 'se faz favor', 'obrigado', 'obrigada', 'mycroft'],
    requests: [
      'podes', 'pode', 'você pode', 'voce pode', 'consegues', 'consegue', 'poderias', 'poderia', 'podias', 'podia',
    ],
    orders: ['quero que', 'queria que', 'gostava que', 'preciso que'],
    links: ['de', 'do', 'da', 'dos', 'das', 'd'],
    nouns: ['volume', 'silêncio', 'alarme', 'temporizador', 'luzes'],
    numbers: [
      'dois', 'duas', 'três', 'quatro', 'cinco', 'seis', 'sete', 'oito', 'nove', 'dez', 'onze', 'doze', 'quinze',
      'vinte', 'trinta', 'quarenta', 'cinquenta', 'sessenta', 'noventa', 'cem', 'meia',
    ],
  },
  es: {
    openers: [
      ...WAKE, 'oye mycroft', 'hola mycroft', 'oye', 'hola', 'ok', 'vale', 'bueno', 'por favor', 'gracias',
      'buenos días', 'buenas tardes', 'buenas noches',
    ],
    closers: ['por favor', 'gracias', 'mycroft'],
    requests: ['puedes', 'puede', 'podrías', 'podría', 'me puedes', 'me podrías', 'usted puede'],
    orders: ['quiero que', 'quisiera que', 'necesito que'],
    links: ['de', 'del'],
    nouns: ['volumen', 'silencio', 'alarma', 'temporizador', 'luces'],
    numbers: [
      'dos', 'tres', 'cuatro', 'cinco', 'seis', 'siete', 'ocho', 'nueve', 'diez', 'once', 'doce', 'quince', 'veinte',
      'treinta', 'cuarenta', 'cincuenta', 'sesenta', 'noventa', 'cien', 'media',
    ],
  },
  fr: {
    openers: [
      ...WAKE, 'dis mycroft', 'hé mycroft', 'salut mycroft', 'bonjour mycroft', 'hé', 'salut', 'bonjour', 'ok',
      "s'il te plaît", "s'il vous plaît", 'svp', 'alors', 'euh', 'merci',
    ],
    closers: ["s'il te plaît", "s'il vous plaît", 'svp', 'merci', 'mycroft'],
    requests: [
      'peux-tu', 'pouvez-vous', 'tu peux', 'vous pouvez', 'pourrais-tu', 'pourriez-vous', 'tu pourrais',
      'vous pourriez', 'est-ce que tu peux', 'est-ce que vous pouvez', 'est-ce que tu pourrais',
    ],
    orders: ['je veux que tu', 'je voudrais que tu', "j'aimerais que tu"],
    links: ['de', 'du', 'des', 'd'],
    nouns: ['volume', 'silence', 'minuteur', 'alarme', 'réveil', 'lumière', 'lumières'],
    numbers: [
      'deux', 'trois', 'quatre', 'cinq', 'six', 'sept', 'huit', 'neuf', 'dix', 'onze', 'douze', 'quinze', 'vingt',
      'trente', 'quarante', 'cinquante', 'soixante', 'cent', 'demi',
    ],
  },
  de: {
    openers: [...WAKE, 'hallo mycroft', 'hey', 'hallo', 'ok', 'okay', 'bitte', 'also', 'danke', 'äh', 'ähm'],
    closers: ['bitte', 'danke', 'mycroft'],
    requests: ['kannst du', 'könntest du', 'können sie', 'könnten sie', 'würdest du', 'würden sie'],
    orders: ['ich will dass du', 'ich möchte dass du', 'ich möchte, dass du'],
    links: ['von', 'vom', 'des'],
    nouns: ['lautstärke', 'timer', 'wecker', 'alarm', 'licht', 'lichter'],
    numbers: [
      'zwei', 'drei', 'vier', 'fünf', 'sechs', 'sieben', 'acht', 'neun', 'zehn', 'elf', 'zwölf', 'fünfzehn',
      'zwanzig', 'dreißig', 'vierzig', 'fünfzig', 'sechzig', 'hundert', 'halbe',
    ],
    infinitive: ['en', 'n'],
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

/** The length of the longest of `phrases` starting at `at`, 0 when none does. */
function longestAt(utterance: Words, phrases: readonly Words[], at = 0): number {
  return phrases.reduce(
    (best, phrase) => (phrase.length > best && startsWith(utterance, phrase, at) ? phrase.length : best),
    0,
  );
}

function accept(reason: GateVerdict['reason']): GateVerdict {
  return { accept: true, reason };
}

function reject(reason: GateVerdict['reason']): GateVerdict {
  return { accept: false, reason };
}

interface CompiledFraming {
  readonly openers: readonly Words[];
  readonly closers: readonly Words[];
  readonly requests: readonly Words[];
  readonly orders: readonly Words[];
  readonly links: ReadonlySet<string>;
  readonly nouns: ReadonlySet<string> | '*';
  readonly numbers: ReadonlySet<string>;
  readonly infinitive: readonly string[];
}

const NO_FRAMING: CompiledFraming = {
  openers: [],
  closers: [],
  requests: [],
  orders: [],
  links: new Set(),
  nouns: new Set(),
  numbers: new Set(),
  infinitive: [],
};

const COMPILED: ReadonlyMap<string, CompiledFraming> = new Map(
  Object.entries(FRAMING).map(([lang, f]) => [
    lang,
    {
      openers: f.openers.map(words),
      closers: f.closers.map(words),
      requests: f.requests.map(words),
      orders: f.orders.map(words),
      links: new Set(f.links.flatMap(words)),
      nouns: f.nouns === '*' ? '*' : new Set(f.nouns.flatMap(words)),
      numbers: new Set(f.numbers.flatMap(words)),
      infinitive: f.infinitive ?? [],
    },
  ]),
);

/** Everything one classification needs, per language. */
interface Lexicon {
  readonly questions: readonly Words[];
  readonly commands: readonly Words[];
  readonly framing: CompiledFraming;
  readonly grammar: YesNoGrammar | undefined;
}

/** Rule 5: strip openers from the start (and, with `closers`, closers from the end) until none is left. */
function unframe(text: Words, framing: CompiledFraming, closers: boolean): Words {
  let start = 0;
  let end = text.length;
  for (let n = longestAt(text, framing.openers); n > 0 && start < end; n = longestAt(text, framing.openers, start)) {
    start += n;
  }
  if (closers) {
    const ends = (phrase: Words): boolean =>
      phrase.length <= end - start && startsWith(text, phrase, end - phrase.length);
    for (let phrase = framing.closers.find(ends); phrase !== undefined; phrase = framing.closers.find(ends)) {
      end -= phrase.length;
    }
  }
  return text.slice(start, Math.max(start, end));
}

function isNumber(word: string | undefined, framing: CompiledFraming): boolean {
  return word !== undefined && (/^\d/u.test(word) || framing.numbers.has(word));
}

/** Rule 6: a one-word command phrase at `at` read as a noun ("volume of a sphere", "vitesse de la lumière"). */
function nounReading(text: Words, at: number, length: number, framing: CompiledFraming): boolean {
  const word = text[at];
  if (length !== 1 || word === undefined) return false;
  if (framing.nouns !== '*' && !framing.nouns.has(word)) return false;
  const next = text[at + 1];
  if (next !== undefined && framing.links.has(next) && !isNumber(text[at + 2], framing)) return true;
  return text.slice(Math.max(0, at - 2), at).some((w) => framing.links.has(w));
}

/** The length of the longest command phrase at `at` that is not read as a noun, 0 when none. */
function commandAt(text: Words, at: number, lexicon: Lexicon): number {
  return lexicon.commands.reduce(
    (best, phrase) =>
      phrase.length > best && startsWith(text, phrase, at) && !nounReading(text, at, phrase.length, lexicon.framing)
        ? phrase.length
        : best,
    0,
  );
}

function containsCommand(text: Words, lexicon: Lexicon): boolean {
  for (let at = 0; at < text.length; at++) if (commandAt(text, at, lexicon) > 0) return true;
  return false;
}

function asks(text: Words, lexicon: Lexicon): boolean {
  return lexicon.questions.some((phrase) => contains(text, phrase));
}

/** Rule 7a: auxiliary + a word it cannot take as its subject, i.e. the imperative "do a barrel roll". */
function imperativeAuxiliary(text: Words, grammar: YesNoGrammar | undefined): boolean {
  const [first, second] = text;
  return first !== undefined && second !== undefined && grammar?.imperative.get(first)?.includes(second) === true;
}

/** Rule 6c: is what follows a request frame a command? */
function isCommand(rest: Words, lexicon: Lexicon): boolean {
  if (rest.length === 0) return false;
  const command = commandAt(rest, 0, lexicon);
  if (command > 0 && command > longestAt(rest, lexicon.questions)) return true;
  if (imperativeAuxiliary(rest, lexicon.grammar)) return true;
  const last = rest[rest.length - 1] ?? '';
  return !asks(rest, lexicon) && lexicon.commands.some(
    (phrase) =>
      phrase.length === 1 &&
      (phrase[0] ?? '').length >= 3 &&
      lexicon.framing.infinitive.some((ending) => last.endsWith(`${phrase[0] ?? ''}${ending}`)),
  );
}

/** Rule 6: the verdict of the utterance's opening, or null when it gives none. */
function opening(text: Words, lexicon: Lexicon): GateVerdict | null {
  const question = longestAt(text, lexicon.questions);
  const command = commandAt(text, 0, lexicon);
  const request = longestAt(text, lexicon.framing.requests);
  const order = longestAt(text, lexicon.framing.orders);
  if (question > 0 && question >= Math.max(command, request, order)) return accept('question_word');
  if (command > Math.max(request, order)) return reject('command_word');
  if (request === 0 && order === 0) return null;
  const rest = unframe(text.slice(Math.max(request, order)), lexicon.framing, false);
  if (isCommand(rest, lexicon)) return reject('command_word');
  if (order > request && !asks(rest, lexicon)) return reject('command_word');
  return null;
}

/** Rule 7: the verdict for an auxiliary-initial utterance, or null when it is not one. */
function yesNo(text: Words, grammar: YesNoGrammar | undefined): GateVerdict | null {
  const [first, second] = text;
  if (grammar === undefined || first === undefined || second === undefined) return null;
  if (!grammar.auxiliaries.includes(first)) return null;
  if (imperativeAuxiliary(text, grammar)) return reject('command_word');
  if (text.length < 3) return null;
  return accept(grammar.subjects.includes(second) ? 'question_word' : 'unsure_accept');
}

type Vocabulary = GateConfig['vocabulary'][string];

/**
 * Compiled once per vocabulary and language, not per utterance: a vocabulary is read-only once it has been used
 * (the daemon's config is deep-frozen; an embedder changing a GateConfig's lists in place would not be seen — give
 * `classifyQuestion` a new object instead).
 */
const LEXICONS = new WeakMap<Vocabulary, Map<string, Lexicon>>();

function lexiconOf(vocabulary: Vocabulary, primary: string): Lexicon {
  let byLanguage = LEXICONS.get(vocabulary);
  if (byLanguage === undefined) {
    byLanguage = new Map();
    LEXICONS.set(vocabulary, byLanguage);
  }
  let lexicon = byLanguage.get(primary);
  if (lexicon === undefined) {
    const grammar = Object.hasOwn(YES_NO, primary) ? YES_NO[primary] : undefined;
    const auxiliaries = grammar?.auxiliaries ?? [];
    lexicon = {
      questions: vocabulary.question
        .map(words)
        .filter((phrase) => !(phrase.length === 1 && auxiliaries.includes(phrase[0] ?? ''))),
      commands: vocabulary.command.map(words).filter((phrase) => phrase.length > 0),
      framing: COMPILED.get(primary) ?? NO_FRAMING,
      grammar,
    };
    byLanguage.set(primary, lexicon);
  }
  return lexicon;
}

/** OVOS-COMMON-QUERY-1 §4: should the contest run for this utterance? Pure; see the header for the rules. */
export function classifyQuestion(utterance: string, lang: string, gate: GateConfig): GateVerdict {
  if (!gate.enabled) return accept('gate_disabled');

  const primary = (lang.split(/[-_]/u)[0] ?? '').toLowerCase();
  const vocabulary = Object.hasOwn(gate.vocabulary, primary) ? gate.vocabulary[primary] : undefined;
  if (vocabulary === undefined) return accept('unknown_language');

  if (hasQuestionMark(utterance)) return accept('question_mark');

  const lexicon = lexiconOf(vocabulary, primary);
  const { framing, grammar } = lexicon;

  const text = unframe(words(utterance), framing, true);
  if (text.length === 0) return reject('too_short');

  const opened = opening(text, lexicon);
  if (opened !== null) return opened;

  const inverted = yesNo(text, grammar);
  if (inverted !== null) return inverted;

  const asking = asks(text, lexicon);
  if (!asking && containsCommand(text, lexicon)) return reject('command_word');
  if (!asking && text.length < gate.minWords) return reject('too_short');
  return accept('unsure_accept');
}
