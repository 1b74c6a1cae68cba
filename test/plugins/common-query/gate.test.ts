import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type GateConfig } from '../../../src/config/defaults.js';
import { classifyQuestion } from '../../../src/plugins/common-query/gate.js';

const GATE = DEFAULT_CONFIG.commonQuery.gate;

describe('question gate, OVOS-COMMON-QUERY-1 §4.2 conformance (en)', () => {
  it.each([
    ['what is the capital of France'],
    ['who invented electricity'],
    ['tell me about France'],
    ['how far is the moon'],
    ['what is the speed of light'],
    ['what is the meaning of life'],
    ['Who wrote Hamlet?'],
  ])('§4.2 MUST accept a factual question: %s', (utterance) => {
    expect(classifyQuestion(utterance, 'en-US', GATE).accept).toBe(true);
  });

  it.each([
    ['play music'],
    ['set a timer'],
    ['turn off the lights'],
    ['stop'],
    ['pause the music'],
    ['do a barrel roll'],
  ])('§4.2 SHOULD NOT accept an action command: %s', (utterance) => {
    expect(classifyQuestion(utterance, 'en-US', GATE)).toEqual({ accept: false, reason: 'command_word' });
  });
});

describe('question gate, the reported defect (OVOS-COMMON-QUERY-1 §4.2)', () => {
  it.each([
    ['is the volume of the sun huge'],
    ['was call of duty released in 2003'],
    ['volume of a sphere'],
    ['einstein birthday'],
  ])(
    'OVOS-COMMON-QUERY-1 §4.2 MUST accept a question, even one holding a command word or no question word: %s',
    (utterance) => {
      expect(classifyQuestion(utterance, 'en', GATE).accept).toBe(true);
    },
  );

  it.each([
    ['please do a barrel roll'],
    ['hey mycroft, please do a barrel roll'],
    ['could you please turn off the lights'],
  ])(
    'OVOS-COMMON-QUERY-1 §4.2 SHOULD NOT accept a command behind a politeness or wake prefix: %s',
    (utterance) => {
      expect(classifyQuestion(utterance, 'en', GATE)).toEqual({ accept: false, reason: 'command_word' });
    },
  );

  it.each([
    ['o volume do sol é enorme', 'pt'],
    ['volumen de una esfera', 'es'],
    ['vitesse de la lumière', 'fr'],
    ['einsteins geburtstag', 'de'],
  ])('OVOS-COMMON-QUERY-1 §4.2 MUST accept a noun-phrase question: %s (%s)', (utterance, lang) => {
    expect(classifyQuestion(utterance, lang, GATE).accept).toBe(true);
  });

  it.each([
    ['puedes poner música', 'es'],
    ['peux-tu mettre de la musique', 'fr'],
    ['kannst du musik spielen', 'de'],
  ])('OVOS-COMMON-QUERY-1 §4.2 SHOULD NOT accept a polite command: %s (%s)', (utterance, lang) => {
    expect(classifyQuestion(utterance, lang, GATE)).toEqual({ accept: false, reason: 'command_word' });
  });

  // Regression guards, rejected before the fix too: politeness stripping and the noun reading must not undo them.
  it.each([
    ['por favor toca música', 'pt'],
    ['temporizador de cinco minutos', 'es'],
    ['mets de la musique', 'fr'],
  ])('OVOS-COMMON-QUERY-1 §4.2 SHOULD NOT accept a command (still rejected): %s (%s)', (utterance, lang) => {
    expect(classifyQuestion(utterance, lang, GATE)).toEqual({ accept: false, reason: 'command_word' });
  });
});

describe('question gate rules, §4.1', () => {
  it.each([
    ['what is the capital of France', 'question_word'],
    ['tell me about France', 'question_word'],
    ['Who wrote Hamlet?', 'question_mark'],
    ['play music?', 'question_mark'],
    ['is the moon made of cheese', 'question_word'],
    ['does a cat have nine lives', 'question_word'],
    ['do you know who wrote hamlet', 'question_word'],
    ['are the northern lights visible from london', 'question_word'],
    ['is paris the capital of france', 'unsure_accept'],
    ['paris is lovely', 'unsure_accept'],
  ] as const)('§4.2 when in doubt, accept: %s → %s', (utterance, reason) => {
    expect(classifyQuestion(utterance, 'en', GATE)).toEqual({ accept: true, reason });
  });

  it.each([
    ['do it', 'command_word'],
    ['have a nice day', 'command_word'],
    ['can you play some music', 'command_word'],
    ['could you set a timer for ten minutes', 'command_word'],
    ['the lights please', 'command_word'],
    ['hello', 'too_short'],
    ['thanks mate', 'too_short'],
    ['', 'too_short'],
    ['  ...  ', 'too_short'],
  ] as const)('§4.1 reject: %j → %s', (utterance, reason) => {
    expect(classifyQuestion(utterance, 'en', GATE)).toEqual({ accept: false, reason });
  });

  it('§4.1 a command word later in a question does not reject it ("what time is the alarm set for")', () => {
    expect(classifyQuestion('what time is the alarm set for', 'en', GATE).accept).toBe(true);
  });

  it('§4.1 phrases match whole words only ("light" is not the command word "lights")', () => {
    expect(classifyQuestion('the speed of light in vacuum', 'en', GATE)).toEqual({
      accept: true,
      reason: 'unsure_accept',
    });
  });

  it('§4.1 a short utterance with a question word is accepted ("why")', () => {
    expect(classifyQuestion('why', 'en', GATE)).toEqual({ accept: true, reason: 'question_word' });
  });
});

describe('question gate configuration, §4', () => {
  it('§4 a disabled gate accepts everything, commands included', () => {
    const gate: GateConfig = { ...GATE, enabled: false };
    expect(classifyQuestion('play music', 'en-US', gate)).toEqual({ accept: true, reason: 'gate_disabled' });
    expect(classifyQuestion('', 'en-US', gate)).toEqual({ accept: true, reason: 'gate_disabled' });
  });

  it.each([['xx'], ['ja-JP'], [''], ['toString'], ['__proto__']])(
    '§4.2 bias to accept: a language without vocabulary (%j) is accepted',
    (lang) => {
      expect(classifyQuestion('play music', lang, GATE)).toEqual({ accept: true, reason: 'unknown_language' });
    },
  );

  it.each([['en'], ['en-US'], ['EN-gb'], ['en_AU']])('§4 the language is looked up by primary subtag: %s', (lang) => {
    expect(classifyQuestion('play music', lang, GATE)).toEqual({ accept: false, reason: 'command_word' });
  });

  it('§4 minWords comes from config', () => {
    const gate: GateConfig = { ...GATE, minWords: 5 };
    expect(classifyQuestion('paris is lovely', 'en', gate)).toEqual({ accept: false, reason: 'too_short' });
    expect(classifyQuestion('paris is lovely in spring', 'en', gate).accept).toBe(true);
  });

  it('§4 vocabulary comes from config; an auxiliary listed as a question word is still grammar', () => {
    const gate: GateConfig = {
      ...GATE,
      vocabulary: { en: { question: ['what', 'do'], command: ['roll'] } },
    };
    expect(classifyQuestion('do a barrel roll', 'en', gate)).toEqual({ accept: false, reason: 'command_word' });
    expect(classifyQuestion('roll the dice', 'en', gate)).toEqual({ accept: false, reason: 'command_word' });
    expect(classifyQuestion('play some music', 'en', gate)).toEqual({ accept: true, reason: 'unsure_accept' });
  });
});

describe('question gate normalisation, §4.1', () => {
  it.each([
    ['WHAT IS THE CAPITAL OF FRANCE'],
    ['  What,   is the capital of France!  '],
    ["what's the capital of france"],
    ['"Who wrote Hamlet?"'],
    ['Who wrote Hamlet ?'],
    ['who wrote hamlet？'],
  ])('case, punctuation and spacing do not matter (accept): %j', (utterance) => {
    expect(classifyQuestion(utterance, 'en', GATE).accept).toBe(true);
  });

  it.each([['PLAY MUSIC'], ['Play music!!!'], ['  turn   OFF, the lights. '], ['Stop.']])(
    'case, punctuation and spacing do not matter (reject): %j',
    (utterance) => {
      expect(classifyQuestion(utterance, 'en', GATE)).toEqual({ accept: false, reason: 'command_word' });
    },
  );
});

describe('question gate, other default vocabularies', () => {
  it.each([
    ['qual é a capital de França', 'pt-PT'],
    ['quem inventou a eletricidade', 'pt-BR'],
    ['¿quién escribió Hamlet', 'es-ES'],
    ['cuál es la capital de Francia', 'es'],
    ["qu'est-ce que la photosynthèse", 'fr-FR'],
    ['Qui a inventé l’électricité', 'fr'],
    ['was ist die Hauptstadt von Frankreich', 'de-DE'],
    ['ist der Mond aus Käse', 'de'],
  ])('§4.2 accepts a factual question: %s (%s)', (utterance, lang) => {
    expect(classifyQuestion(utterance, lang, GATE).accept).toBe(true);
  });

  it.each([
    ['toca música', 'pt-PT'],
    ['desliga as luzes', 'pt-BR'],
    ['pon una alarma', 'es-ES'],
    ['apaga las luces', 'es'],
    ['mets de la musique', 'fr-FR'],
    ['éteins les lumières', 'fr'],
    ['spiele Musik', 'de-DE'],
    ['stell einen Timer', 'de'],
  ])('§4.2 rejects an action command: %s (%s)', (utterance, lang) => {
    expect(classifyQuestion(utterance, lang, GATE)).toEqual({ accept: false, reason: 'command_word' });
  });
});
