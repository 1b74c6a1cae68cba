/**
 * Trace replay: the bridge from "a user saw a wrong answer" to a failing test. A trace is one utterance's timeline
 * as a client saw it on a running daemon (`npm run say -- "…" --trace FILE`): every message carrying its
 * utterance_id with its ms offset, and the fallback pools the daemon reported for the session just before
 * (`ovos.pipeline.<stage>.intents.list`). `traceToScenario` reads back what each skill did and when — its pong and
 * how long after its ping, its answer and how long after its request, its handler's length — as a skill roster;
 * `replayTrace` runs that roster through the timing harness on the deterministic clock and says whether the replay
 * gives the recorded decision and whether the spec model agrees with it.
 */
import { isJsonObject, stringField, type JsonObject, type Message } from '../bus/message.js';
import type { Config } from '../config/defaults.js';
import { legacyTopics } from '../dialect/legacy-dialect.js';
import { runScenario, type PathResult } from './run.js';
import type { CommonQuerySkillScript, FallbackSkillScript, SkillScript, TimingScenario } from './scenario.js';

export const TRACE_FORMAT = 'ovos-contests-trace/1';

export interface TraceEntry {
  /** ms since the utterance was sent. */
  readonly at: number;
  readonly type: string;
  readonly data: JsonObject;
  readonly context: JsonObject;
}

export interface Trace {
  readonly format: typeof TRACE_FORMAT;
  readonly utterance: string;
  readonly session_id: string;
  /** Fallback stage → its pool, in order, as the daemon listed it for the session before the utterance. */
  readonly pools: Readonly<Record<string, readonly string[]>>;
  readonly messages: readonly TraceEntry[];
}

export class TraceError extends Error {}

export function parseTrace(text: string): Trace {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new TraceError(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isJsonObject(data) || data['format'] !== TRACE_FORMAT) throw new TraceError(`not a trace: expected "format": "${TRACE_FORMAT}"`);
  const utterance = stringField(data, 'utterance');
  const sessionId = stringField(data, 'session_id');
  if (utterance === undefined || sessionId === undefined) throw new TraceError('a trace names its utterance and session_id');
  const pools: Record<string, string[]> = {};
  const rawPools = data['pools'];
  if (!isJsonObject(rawPools)) throw new TraceError('pools: an object of stage → skill ids');
  for (const [stage, list] of Object.entries(rawPools)) {
    if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string')) throw new TraceError(`pools.${stage}: a list of skill ids`);
    pools[stage] = list;
  }
  const rawMessages = data['messages'];
  if (!Array.isArray(rawMessages)) throw new TraceError('messages: a list');
  const messages = rawMessages.map((m, i): TraceEntry => {
    if (!isJsonObject(m) || typeof m['at'] !== 'number' || typeof m['type'] !== 'string' || !isJsonObject(m['data']) || !isJsonObject(m['context'])) {
      throw new TraceError(`messages[${i}]: {at, type, data, context}`);
    }
    return { at: m['at'], type: m['type'], data: m['data'], context: m['context'] };
  });
  return { format: TRACE_FORMAT, utterance, session_id: sessionId, pools, messages };
}

/** What the daemon decided, as recorded. */
export interface RecordedDecision {
  readonly decidedBy: string | null;
  readonly skill_id: string | null;
  readonly decidedAt: number | null;
}

export interface ReconstructedScenario {
  readonly scenario: TimingScenario;
  readonly recorded: RecordedDecision;
  /** What the trace could not tell, and what was assumed instead. */
  readonly notes: readonly string[];
}

const ms = (value: number): number => Math.max(0, Math.round(value));

export function traceToScenario(config: Config, trace: Trace): ReconstructedScenario {
  const notes: string[] = [];
  const first = (pred: (m: TraceEntry) => boolean): TraceEntry | undefined => trace.messages.find(pred);
  const skills: SkillScript[] = [];
  for (const [stage, pool] of Object.entries(trace.pools)) {
    const range = config.fallback.stages[stage];
    if (range === undefined) {
      notes.push(`pool of ${stage} recorded, but the config has no such fallback stage: left out`);
      continue;
    }
    // The utterance's legacy broadcasts (src/plugins/README.md "Legacy fallback skills"): one asks for every stage (a
    // second only when a stage got other utterances than arrived, or a skill it could not reach); the pongs to one carry
    // its contest_id (they are replies).
    const broadcasts = trace.messages.filter((m) => m.type === legacyTopics.fallbackPing);
    const broadcast = broadcasts[0];
    for (const [index, skillId] of pool.entries()) {
      // Only the order inside a stage matters (§5): priorities are placed in the stage's range in pool order.
      const priority = Math.min(range[1], range[0] + index);
      const ping = first((m) => m.type === `${skillId}.fallback.ping`);
      let script: FallbackSkillScript = { kind: 'fallback', skill_id: skillId, priority };
      if (broadcast !== undefined && ping === undefined) {
        // Not asked on a ping of its own in a stage that broadcast: a legacy skill (a spec skill whose turn never came
        // changes no decision either way).
        // Its first answer to one of them, timed from the broadcast it answers.
        let pong: TraceEntry | undefined;
        let asked = broadcast;
        for (const b of broadcasts) {
          const id = stringField(b.context, 'contest_id');
          const answer = first((m) => m.type === legacyTopics.fallbackPong && stringField(m.data, 'skill_id') === skillId && stringField(m.context, 'contest_id') === id);
          if (answer !== undefined) {
            pong = answer;
            asked = b;
            break;
          }
        }
        const request = first((m) => m.type === legacyTopics.fallbackRequest(skillId));
        // Its handler's end: `.response {result: true}`; `{result: false}` is a failure — unless the handler was killed
        // (a `.killed`, or the `.response` came after our force_timeout to it): it ran past the handler timeout and
        // never ended on its own.
        const response = first((m) => m.type === `ovos.skills.fallback.${skillId}.response`);
        const killed = first((m) => m.type === `ovos.skills.fallback.${skillId}.killed`);
        const forced = first((m) => m.type === legacyTopics.fallbackForceTimeout && stringField(m.data, 'skill_id') === skillId);
        script = { ...script, dialect: 'legacy', ...(pong === undefined ? { pongAfterMs: 'never' } : { pongAfterMs: ms(pong.at - asked.at), willing: pong.data['can_handle'] === true }) };
        if (request !== undefined) {
          const ended = response !== undefined && killed === undefined && (forced === undefined || response.at < forced.at) ? response : undefined;
          script = { ...script, handlerMs: ended === undefined ? 'never' : ms(ended.at - request.at), ...(ended !== undefined && ended.data['result'] !== true ? { handlerFails: true } : {}) };
        }
        skills.push(script);
        continue;
      }
      const pong = first((m) => m.type === `${skillId}.fallback.pong`);
      const dispatch = first((m) => m.type === `${skillId}:fallback`);
      const done = first((m) => (m.type === 'mycroft.skill.handler.complete' || m.type === 'mycroft.skill.handler.error') && stringField(m.context, 'skill_id') === skillId);
      if (ping === undefined) {
        notes.push(`${skillId} (${stage}) was never asked: assumed to decline at once`);
        script = { ...script, willing: false };
      } else if (pong === undefined) {
        script = { ...script, pongAfterMs: 'never' };
      } else {
        script = { ...script, pongAfterMs: ms(pong.at - ping.at), willing: pong.data['can_handle'] === true };
      }
      if (dispatch !== undefined) {
        script = { ...script, handlerMs: done === undefined ? 'never' : ms(done.at - dispatch.at), ...(done?.type === 'mycroft.skill.handler.error' ? { handlerFails: true } : {}) };
      }
      skills.push(script);
    }
  }
  const seen = new Set<string>();
  const cqPing = first((m) => m.type === 'ovos.common_query.ping');
  if (cqPing !== undefined) {
    for (const pong of trace.messages.filter((m) => m.type === 'ovos.common_query.pong')) {
      const skillId = stringField(pong.data, 'skill_id');
      if (skillId === undefined || seen.has(skillId)) continue;
      seen.add(skillId);
      const claim = pong.data['can_answer'] === true;
      let script: CommonQuerySkillScript = { kind: 'common_query', skill_id: skillId, pong: claim ? 'claim' : 'decline', pongAfterMs: ms(pong.at - cqPing.at) };
      const latency = pong.data['latency_ms'];
      if (typeof latency === 'number') script = { ...script, latencyMs: latency };
      const request = first((m) => m.type === `${skillId}:common_query`);
      const answer = first((m) => m.type === `${skillId}.common_query.response`);
      if (claim && request !== undefined) {
        if (answer === undefined) script = { ...script, answerAfterMs: 'never' };
        else {
          const text = stringField(answer.data, 'answer');
          const conf = answer.data['conf'];
          script = { ...script, answerAfterMs: ms(answer.at - request.at), answer: text ?? null, ...(typeof conf === 'number' ? { conf } : {}) };
        }
      }
      skills.push(script);
    }
    notes.push('common-query skills that stayed silent are not on the wire, so not in the replay (they cannot change a decision)');
  }
  // Legacy skills (src/plugins/README.md "Legacy common-query skills"): their replies to the contest's `question:query`, times
  // from the question — `searching: true` (the claim), then the answer or `searching: false`.
  const question = first((m) => m.type === legacyTopics.questionQuery);
  if (question !== undefined) {
    const replies = trace.messages.filter((m) => m.type === legacyTopics.questionQueryResponse);
    for (const skillId of new Set(replies.flatMap((m) => stringField(m.data, 'skill_id') ?? []))) {
      if (seen.has(skillId)) continue;
      seen.add(skillId);
      const mine = replies.filter((m) => stringField(m.data, 'skill_id') === skillId);
      const claim = mine.find((m) => m.data['searching'] === true);
      const after = (m: TraceEntry): number => ms(m.at - question.at);
      if (claim === undefined) {
        skills.push({ kind: 'common_query', skill_id: skillId, dialect: 'legacy', pong: 'decline', pongAfterMs: after(mine[0]!) });
        continue;
      }
      const answer = mine.find((m) => m !== claim && (typeof m.data['answer'] === 'string' || m.data['searching'] === false));
      let script: CommonQuerySkillScript = { kind: 'common_query', skill_id: skillId, dialect: 'legacy', pong: 'claim', pongAfterMs: after(claim) };
      if (answer === undefined) script = { ...script, answerAfterMs: 'never' };
      else {
        const text = stringField(answer.data, 'answer');
        const conf = answer.data['conf'];
        script = { ...script, answerAfterMs: after(answer), answer: text ?? null, ...(typeof conf === 'number' && text !== undefined ? { conf } : {}) };
        // A classic CommonQuerySkill says so in its answer (`handles_speech: true`; ovos-workshop common_query_skill.py).
        if (answer.data['handles_speech'] === true) script = { ...script, classic: true };
      }
      skills.push(script);
    }
    notes.push('legacy common-query skills that never replied are not on the wire, so not in the replay: on the daemon they hold the poll open until the claim bound');
  }
  if (cqPing !== undefined || question !== undefined) {
    notes.push('the replay learns the roster first (warm-up questions); a daemon that had not heard from these skills yet closed its poll at the claim bound, so its decision may come later than the replay\'s');
  }
  const matched = first((m) => m.type === 'ovos.intent.matched');
  const unmatched = first((m) => m.type === 'ovos.intent.unmatched');
  let recorded: RecordedDecision = { decidedBy: null, skill_id: null, decidedAt: null };
  if (matched !== undefined) {
    const decidedBy = stringField(matched.data, 'pipeline_id') ?? null;
    let skillId = stringField(matched.data, 'skill_id') ?? null;
    // A legacy winner is named by the match itself; the plugin's own dispatch names the pipeline: what it spoke says who.
    if (decidedBy === config.commonQuery.pipelineId && skillId === config.commonQuery.pipelineId) {
      const spoken = stringField(first((m) => m.type === 'ovos.utterance.speak')?.data ?? {}, 'utterance');
      skillId = skills.find((s) => s.kind === 'common_query' && s.answer === spoken)?.skill_id ?? null;
    }
    recorded = { decidedBy, skill_id: skillId, decidedAt: ms(matched.at) };
  } else if (unmatched !== undefined) {
    recorded = { decidedBy: 'unmatched', skill_id: null, decidedAt: ms(unmatched.at) };
  }
  return { scenario: { name: `trace ${trace.session_id}: ${trace.utterance}`, utterance: trace.utterance, skills }, recorded, notes };
}

export interface TraceReplay extends ReconstructedScenario {
  /** The reconstructed roster on the deterministic clock, compared with the spec model. */
  readonly replay: PathResult;
  /** The replay reached the recorded decision (same stage and winner). */
  readonly reproduced: boolean;
  /** Recorded decision time minus the replay's (transport and scheduling on the real bus; a few ms is normal). */
  readonly driftMs: number | null;
}

export async function replayTrace(config: Config, trace: Trace): Promise<TraceReplay> {
  const reconstructed = traceToScenario(config, trace);
  const replay = await runScenario(config, reconstructed.scenario);
  const { recorded } = reconstructed;
  const reproduced = recorded.decidedBy === replay.observed.decidedBy && recorded.skill_id === replay.observed.skill_id;
  const driftMs = recorded.decidedAt === null || replay.observed.decidedAt === null ? null : recorded.decidedAt - replay.observed.decidedAt;
  return { ...reconstructed, replay, reproduced, driftMs };
}

/** A message as a trace entry (`at` rounded to 0.1 ms). */
export function traceEntry(at: number, message: Message): TraceEntry {
  return { at: Math.round(at * 10) / 10, type: message.type, data: message.data, context: message.context };
}
