/**
 * The question gate's edges (OVOS-COMMON-QUERY-1 §4.2, the rules in the header of
 * src/plugins/common-query/gate.ts): one concrete utterance per rule boundary that the conformance, rule and corpus
 * tests left open — each was a surviving mutant of gate.ts, and each test was checked against it by hand.
 *
 * Every test compiles its vocabulary afresh (`gate()` clones the default one inside the test): the gate compiles a
 * vocabulary once per object (gate.ts `lexiconOf`), so a test reusing an object compiled earlier in the process never
 * runs that compilation — and a mutation run's per-test coverage does not count it as covering it (the auxiliary
 * filter of rule 7, for one, survived the whole suite that way).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type GateConfig } from '../../../src/config/defaults.js';
import { classifyQuestion, type GateVerdict } from '../../../src/plugins/common-query/gate.js';

const GATE = DEFAULT_CONFIG.commonQuery.gate;
const EN = GATE.vocabulary['en'];
if (EN === undefined) throw new Error('the default gate vocabulary has no English');
/** The default English lists, as a deployment would copy them into its own config. */
const EN_QUESTION: readonly string[] = EN.question;
const EN_COMMAND: readonly string[] = EN.command;

/** The default gate with a freshly compiled copy of the default vocabulary (or `vocabulary`), plus `over`. */
function gate(over: Partial<GateConfig> = {}): GateConfig {
  return { ...GATE, vocabulary: structuredClone(GATE.vocabulary), ...over };
}

/** The default gate whose English vocabulary is `en` (a deployment's own lists), the other languages default. */
function withEnglish(en: { question: string[]; command: string[] }): GateConfig {
  return gate({ vocabulary: { ...structuredClone(GATE.vocabulary), en } });
}

const ACCEPT_QUESTION: GateVerdict = { accept: true, reason: 'question_word' };
const ACCEPT_UNSURE: GateVerdict = { accept: true, reason: 'unsure_accept' };
const REJECT_COMMAND: GateVerdict = { accept: false, reason: 'command_word' };

describe('question gate edges: normalisation and framing (rules 4, 5)', () => {
  it("§4.2 rule 4: an apostrophe becomes a space, so \"volume d'une sphère\" keeps its noun reading", () => {
    expect(classifyQuestion("volume d'une sphère", 'fr', gate())).toEqual(ACCEPT_UNSURE);
  });

  it('§4.2 rule 4: a vocabulary phrase that normalises to nothing ("?") matches nothing, so it makes nothing a question', () => {
    const vocabulary = withEnglish({ question: [...EN_QUESTION, '?'], command: [...EN_COMMAND] });
    expect(classifyQuestion('the lights please', 'en', vocabulary)).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 5: nothing left after the framing is too short even when minWords is 0 ("hello")', () => {
    expect(classifyQuestion('hello', 'en', gate({ minWords: 0 }))).toEqual({ accept: false, reason: 'too_short' });
  });
});

describe('question gate edges: the opening (rule 6)', () => {
  it('§4.2 rule 6b: the longest phrase at the start wins, "tell me a joke" beats "tell me"', () => {
    expect(classifyQuestion('tell me a joke', 'en', gate())).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6b: an opening command phrase rejects even with a question word after it ("play what a wonderful world")', () => {
    expect(classifyQuestion('play what a wonderful world', 'en', gate())).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6: the longest command phrase wins whatever order the vocabulary lists it in', () => {
    const vocabulary = withEnglish({ question: [...EN_QUESTION], command: ['tell me a joke', 'tell'] });
    expect(classifyQuestion('tell me a joke', 'en', vocabulary)).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6: the longest question phrase wins whatever order the vocabulary lists it in', () => {
    const vocabulary = withEnglish({ question: ['tell me about', 'tell'], command: ['tell me'] });
    expect(classifyQuestion('tell me about the moon', 'en', vocabulary)).toEqual(ACCEPT_QUESTION);
  });

  it('§4.2 rule 6: ties go to the question (a deployment that also lists "look up" as a command)', () => {
    const vocabulary = withEnglish({ question: [...EN_QUESTION], command: [...EN_COMMAND, 'look up'] });
    expect(classifyQuestion('look up the weather in paris', 'en', vocabulary)).toEqual(ACCEPT_QUESTION);
  });

  it('§4.2 rule 6c: after a request frame too, a tie goes to the question ("can you look up …" is no command)', () => {
    const vocabulary = withEnglish({ question: [...EN_QUESTION], command: [...EN_COMMAND, 'look up'] });
    expect(classifyQuestion('can you look up the weather in paris', 'en', vocabulary)).toEqual(ACCEPT_QUESTION);
  });
});

describe('question gate edges: the noun reading of a command word (rule 6)', () => {
  it('§4.2 rule 6 noun reading: a word that only contains a digit ("co2") is no number after the link word', () => {
    expect(classifyQuestion('volume of co2 in the atmosphere', 'en', gate())).toEqual(ACCEPT_UNSURE);
  });

  it('§4.2 rule 6 noun reading: only a one-word command phrase has one ("for the love of god be quiet")', () => {
    expect(classifyQuestion('for the love of god be quiet', 'en', gate())).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6 noun reading: a link word more than two words back makes no noun ("for the rest of the day mute notifications")', () => {
    expect(classifyQuestion('for the rest of the day mute notifications', 'en', gate())).toEqual(REJECT_COMMAND);
  });
});

describe('question gate edges: request and order frames (rules 6c, 6d)', () => {
  it.each<[string, string, string, GateVerdict]>([
    ['§4.2 rule 6c: the header\'s "can you see the lights from space" is no command (rules 6c, 7b)', 'can you see the lights from space', 'en', ACCEPT_QUESTION],
    ['§4.2 rule 6c: "can you tell me who wrote hamlet" is no command — "tell me" is longer than the command "tell"', 'can you tell me who wrote hamlet', 'en', ACCEPT_QUESTION],
    ['§4.2 rule 6c: a request frame with nothing after it is no command ("could you please")', 'could you please', 'en', ACCEPT_UNSURE],
    ['§4.2 rule 6c: an imperative auxiliary after a request frame is a command ("can you do a barrel roll")', 'can you do a barrel roll', 'en', REJECT_COMMAND],
    ['§4.2 rule 6c: in a language without yes/no grammar (pt) a request frame before no command goes on to the later rules', 'podes dizer-me qual é a capital do peru', 'pt', ACCEPT_UNSURE],
    ['§4.2 rule 6c (de): a request closed by the infinitive of a one-word command is one ("spiel" → "abspielen")', 'kannst du die musik abspielen', 'de', REJECT_COMMAND],
    ['§4.2 rule 6c (de): only a one-word command has that infinitive — "erzählen" is not "erzähl mir einen witz"', 'kannst du mir etwas über die römer erzählen', 'de', ACCEPT_QUESTION],
    ['§4.2 rule 6c (de): the closing infinitive counts after a request frame only ("muss man den router neu starten")', 'muss man den router neu starten', 'de', ACCEPT_QUESTION],
    ['§4.2 rule 6d: an order frame is a command when no question phrase follows, command word or not ("i want you to remember my name")', 'i want you to remember my name', 'en', REJECT_COMMAND],
  ])('%s', (_rule, utterance, lang, expected) => {
    expect(classifyQuestion(utterance, lang, gate())).toEqual(expected);
  });
});

describe('question gate edges: yes/no inversion (rule 7)', () => {
  it('§4.2 rule 7b: an auxiliary with one more word is no inverted question; "please do stop" falls to rule 8', () => {
    expect(classifyQuestion('please do stop', 'en', gate())).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 7b: an auxiliary with two more words is one, a command word later does not matter ("can parrots talk")', () => {
    expect(classifyQuestion('can parrots talk', 'en', gate())).toEqual(ACCEPT_UNSURE);
  });

  it('§4.2 rule 7: a freshly compiled vocabulary keeps its question words; only single-word auxiliaries leave it', () => {
    expect(classifyQuestion('what is the capital of france', 'en', gate())).toEqual(ACCEPT_QUESTION);
  });

  it('§4.2 rule 7: a multi-word question phrase opening with an auxiliary ("do you know") stays a question phrase', () => {
    const utterance = "tomorrow's alarm, do you know if it is set";
    expect(classifyQuestion(utterance, 'en', gate())).toEqual(REJECT_COMMAND);
    const vocabulary = withEnglish({ question: [...EN_QUESTION, 'do you know'], command: [...EN_COMMAND] });
    expect(classifyQuestion(utterance, 'en', vocabulary)).toEqual(ACCEPT_UNSURE);
  });
});

describe('question gate edges: a question phrase anywhere (rule 8)', () => {
  it('§4.2 rule 8: a question phrase inside the sentence keeps a command word from rejecting it ("i was wondering why leaves change color")', () => {
    expect(classifyQuestion('i was wondering why leaves change color', 'en', gate())).toEqual(ACCEPT_UNSURE);
  });

  it('§4.2 rule 8: a question phrase as the last word counts too ("my alarm is set for when")', () => {
    expect(classifyQuestion('my alarm is set for when', 'en', gate())).toEqual(ACCEPT_UNSURE);
  });
});

/** The default gate whose `lang` vocabulary is `lists` (a deployment's own), the other languages default. */
function withVocabulary(lang: string, lists: { question: string[]; command: string[] }): GateConfig {
  return gate({ vocabulary: { ...structuredClone(GATE.vocabulary), [lang]: lists } });
}

const DE = GATE.vocabulary['de'];
if (DE === undefined) throw new Error('the default gate vocabulary has no German');
const ACCEPT_MARK: GateVerdict = { accept: true, reason: 'question_mark' };

describe('question gate edges: the question mark (rule 3)', () => {
  it.each<[string, string, string, GateVerdict]>([
    ['§4.2 rule 3: an opening "¿" makes a question of what would be a command ("¿pon música")', '¿pon música', 'es', ACCEPT_MARK],
    ['§4.2 rule 3: a question mark inside the sentence is no final one ("really? turn off the lights" is a command)', 'really? turn off the lights', 'en', REJECT_COMMAND],
    ['§4.2 rule 3: a closing quote after the final question mark is ignored (\'play music?"\')', 'play music?"', 'en', ACCEPT_MARK],
    ['§4.2 rule 3: so is a closing bracket ("(play music?)")', '(play music?)', 'en', ACCEPT_MARK],
  ])('%s', (_rule, utterance, lang, expected) => {
    expect(classifyQuestion(utterance, lang, gate())).toEqual(expected);
  });
});

describe('question gate edges: a deployment vocabulary around the request frames (rule 6c)', () => {
  it('§4.2 rule 6c: a command phrase the request frame contains is no opening command ("let\'s …" with "let" listed as a command)', () => {
    const vocabulary = withEnglish({ question: [...EN_QUESTION], command: [...EN_COMMAND, 'let'] });
    expect(classifyQuestion("let's see who wrote hamlet", 'en', vocabulary)).toEqual(ACCEPT_UNSURE);
    expect(classifyQuestion('let the cat in', 'en', vocabulary)).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6c (de): a three-letter command word has its infinitive too ("ruf" → "anrufen")', () => {
    const vocabulary = withVocabulary('de', { question: [...DE.question], command: ['ruf'] });
    expect(classifyQuestion('kannst du mich morgen anrufen', 'de', vocabulary)).toEqual(REJECT_COMMAND);
  });

  it('§4.2 rule 6c (de): a command word shorter than three letters is no infinitive ending ("an" does not make "planen" a command)', () => {
    const vocabulary = withVocabulary('de', { question: [...DE.question], command: [...DE.command, 'an'] });
    expect(classifyQuestion('kannst du mir eine route planen', 'de', vocabulary)).toEqual(ACCEPT_QUESTION);
    expect(classifyQuestion('radio an', 'de', vocabulary)).toEqual(REJECT_COMMAND);
  });
});

describe('question gate edges: any word is only a word (rules 6c, 7a)', () => {
  it('§4.2 rules 6c, 7a: "constructor" after a request frame or an auxiliary is a word like any other, not an Object.prototype key (it threw)', () => {
    expect(classifyQuestion('can you constructor chain in python', 'en', gate())).toEqual(ACCEPT_QUESTION);
    expect(classifyQuestion('do constructor calls cost much', 'en', gate())).toEqual(ACCEPT_UNSURE);
    expect(classifyQuestion('kannst du constructor verketten', 'de', gate())).toEqual(ACCEPT_QUESTION);
  });
});
