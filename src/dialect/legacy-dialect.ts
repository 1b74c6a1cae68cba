/**
 * The legacy dialect: what shipping OpenVoiceOS programs put on the wire today (ovos-core 2.1, ovos-workshop 7,
 * ovos-bus-client 1.3 — ../shared/specs/ovos-wire-today.md and the recorded transcripts). It produces the same
 * `Inbound` kinds as the spec dialect, so machines and plugins never see which dialect a message came in; what the
 * legacy side expects to see back is built here too.
 *
 * So far: the utterance entry (`recognizer_loop:utterance`, as the OVOS voice loop and ovos-bus-client clients send
 * it) and the no-match events OVOS clients listen for. The legacy fallback and common-query topics are to follow.
 */
import type { JsonObject, Message } from '../bus/message.js';
import { reply } from '../bus/message.js';
import { classifyUtterances, type Classified } from './spec-dialect.js';

export const legacyTopics = {
  /** The utterance entry of the OVOS voice loop and of ovos-bus-client clients. */
  recognizerUtterance: 'recognizer_loop:utterance',
  /** Emitted by ovos-core when no stage matched (with the error sound), before its `ovos.utterance.handled`. */
  completeIntentFailure: 'complete_intent_failure',
  playSound: 'mycroft.audio.play_sound',
} as const;

/** The error sound ovos-core plays when nothing matched. */
export const ERROR_SOUND = 'snd/error.mp3';

/** A legacy message we consume, as the same `Inbound` the spec dialect produces; null when not ours. */
export function classifyLegacy(message: Message): Classified {
  switch (message.type) {
    case legacyTopics.recognizerUtterance:
      return classifyUtterances(message.data);
    default:
      return null;
  }
}

/**
 * What an OVOS client waits for when nothing matched (ovos-wire-today.md, "no match"): the error sound, then
 * `complete_intent_failure {utterances, lang}`, each derived from the utterance by `reply`. Sent alongside the spec's
 * `ovos.intent.unmatched`, before the one `ovos.utterance.handled`.
 */
export function legacyUnmatched(entry: Message, utterances: readonly string[], lang: string): Message[] {
  const data: JsonObject = { utterances: [...utterances], lang };
  return [reply(entry, legacyTopics.playSound, { uri: ERROR_SOUND }), reply(entry, legacyTopics.completeIntentFailure, data)];
}
