/**
 * Fallback skills for the multi-daemon tests, each a websocket client of its own (a skill process's connection):
 * willing when the utterance names their word. One speaks the spec dialect, one is an ovos-workshop FallbackSkill as
 * it is on the wire today (ovos-wire-today.md: broadcast ping, its own request, its own handled).
 */
import { createMessage, reply, type Message } from '../../src/bus/message.js';
import type { Probe } from '../integration/probe.js';

const utteranceOf = (message: Message): string => String((message.data['utterances'] as unknown[] | undefined)?.[0] ?? message.data['utterance'] ?? '');

/** OVOS-FALLBACK-1 §3, §6.1: registers over `skill`, pongs `can_handle` by its word, speaks and completes when dispatched. */
export async function specWordSkill(skill: Probe, skillId: string, priority: number, word: string): Promise<Probe> {
  skill.frames.subscribe(({ message }) => {
    if (message === undefined) return;
    if (message.type === `${skillId}.fallback.ping`) {
      skill.send(reply(message, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: utteranceOf(message).includes(word) }));
    }
    if (message.type === `${skillId}:fallback`) {
      skill.send(reply(message, 'ovos.utterance.speak', { utterance: `${skillId} here` }));
      skill.send(reply(message, 'mycroft.skill.handler.complete', {}));
    }
  });
  skill.send(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId }));
  await skill.barrier();
  return skill;
}

/** An ovos-workshop FallbackSkill: answers every broadcast ping by its word, speaks and ends the utterance itself. */
export async function workshopWordSkill(skill: Probe, skillId: string, priority: number, word: string): Promise<Probe> {
  skill.frames.subscribe(({ message }) => {
    if (message === undefined) return;
    if (message.type === 'ovos.skills.fallback.ping') {
      skill.send(reply(message, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: utteranceOf(message).includes(word) }));
    }
    if (message.type === `ovos.skills.fallback.${skillId}.request`) {
      skill.send({ ...message, type: 'speak', data: { utterance: `${skillId} here` } });
      skill.send({ ...message, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } });
      skill.send({ ...message, type: 'ovos.utterance.handled', data: {} });
    }
  });
  skill.send(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, {}));
  await skill.barrier();
  return skill;
}
