/**
 * What a deployer describes to the timing harness (`ovos-contests/testing`): the skills of their deployment, each
 * with the timing it shows on the bus, and the question asked. Times are milliseconds after the utterance reached
 * the skill (pong, answer) or after the message the skill answers (handler).
 */

/** A fallback skill (OVOS-FALLBACK-1): registered at `priority`, asked with `<skill_id>.fallback.ping`. */
export interface FallbackSkillScript {
  readonly kind: 'fallback';
  readonly skill_id: string;
  readonly priority: number;
  /**
   * `spec` (default): an OVOS-FALLBACK-1 skill, asked on its own `<skill_id>.fallback.ping` when its turn comes.
   * `legacy`: an unmodified ovos-workshop `FallbackSkill` (ovos-wire-today.md): registered on
   * `ovos.skills.fallback.register`, asked by the stage's one broadcast `ovos.skills.fallback.ping` when the stage
   * starts (it answers every broadcast), dispatched on `ovos.skills.fallback.<skill_id>.request`, and it ends the
   * utterance with its own `ovos.utterance.handled`.
   */
  readonly dialect?: 'spec' | 'legacy';
  /** Its pong's `can_handle`. Default true. */
  readonly willing?: boolean;
  /**
   * Time from its ping to its pong; `"never"`: it stays silent. Default 0. A legacy skill's ping is the stage's
   * broadcast, sent when the stage starts — not when its turn in the pool comes.
   */
  readonly pongAfterMs?: number | 'never';
  /**
   * Time from its dispatch to `mycroft.skill.handler.complete` (legacy: to `.response {result: true}` and its own
   * `ovos.utterance.handled`); `"never"`: it never completes. Default 0.
   */
  readonly handlerMs?: number | 'never';
  /**
   * Its handler fails at `handlerMs` instead of completing: `mycroft.skill.handler.error` (legacy: `.response
   * {result: false}` and no `ovos.utterance.handled` of its own, as ovos-workshop does when its handler returns
   * false or raises). Default false.
   */
  readonly handlerFails?: boolean;
  /** See `Disconnect`. */
  readonly disconnectAtMs?: number;
}

/** A common-query skill (OVOS-COMMON-QUERY-1 §11). */
export interface CommonQuerySkillScript {
  readonly kind: 'common_query';
  readonly skill_id: string;
  /**
   * `spec` (default): an OVOS-COMMON-QUERY-1 skill. `legacy`: an unmodified ovos-workshop `@common_query` skill
   * (ovos-wire-today.md; src/plugins/README.md "Legacy common-query skills"): it announces itself at start-up (so it is on the
   * roster before it is asked), answers the contest's `question:query` with `searching: true` (its claim: no request
   * follows) and then, unasked, its answer — or `searching: false` when it has none; when it wins, it is sent
   * `question:action.<skill_id>` and speaks, signals its handler and sends the utterance's `ovos.utterance.handled`.
   */
  readonly dialect?: 'spec' | 'legacy';
  /**
   * Legacy only: a classic ovos-workshop `CommonQuerySkill` (deprecated, still installed) instead of an `@common_query`
   * skill. It announces itself `is_classic_cq: true`, its answer says `handles_speech: true`, and it is dispatched the
   * bare `question:action` naming the winner — which every classic skill hears: ovos-workshop runs each one's handler
   * wrapper, so a classic skill that did not win still sends `mycroft.skill.handler.start` / `.complete` and an
   * `ovos.utterance.handled` of its own (a second handled on the wire no daemon can prevent; the harness reports it).
   */
  readonly classic?: boolean;
  /**
   * Its pong: `claim` (`can_answer: true`; legacy: `searching: true`), `decline` (`can_answer: false`; legacy:
   * `searching: false` alone) or `silent`. Default claim.
   */
  readonly pong?: 'claim' | 'decline' | 'silent';
  /** Time from the ping (legacy: the question) to its pong. Default 0. */
  readonly pongAfterMs?: number;
  /** `latency_ms` declared in its pong (§6.2); omitted when undefined. Not for legacy skills (they declare none). */
  readonly latencyMs?: number;
  /**
   * Its answer; null: a response without `answer` (it could not answer after all; legacy: `searching: false`).
   * Default "<skill_id> answer".
   */
  readonly answer?: string | null;
  /** `conf` of its answer. Default 0.7. A legacy skill's may exceed 1: it competes as 1 (src/plugins/README.md). */
  readonly conf?: number;
  /**
   * Time from its request to its response; `"never"`: it never responds. Default 0. A legacy skill is sent no
   * request: its answer's time counts from the question, and it never comes before its `searching: true`.
   */
  readonly answerAfterMs?: number | 'never';
  /** See `Disconnect`. */
  readonly disconnectAtMs?: number;
}

/**
 * `disconnectAtMs` (both kinds): the skill's bus connection closes this many ms after the question reached the
 * daemon — a crash — and it sends nothing from then on (a pong or answer due at that ms or later never comes).
 * Default: it stays connected. Each skill is its own client connection, as on the embedded bus.
 */
export type Disconnect = Pick<FallbackSkillScript, 'disconnectAtMs'>;

export type SkillScript = FallbackSkillScript | CommonQuerySkillScript;

/** One question against a roster. */
export interface TimingScenario {
  readonly name: string;
  /** The utterance. Whether it is a question is the gate's verdict (§4), taken as given by the timing model. */
  readonly utterance: string;
  readonly skills: readonly SkillScript[];
  /**
   * In how many sessions the question is asked at the same ms (default 1). Every skill answers every session's
   * ping and request by its one script, so each session must come out exactly as it would alone: contests are keyed
   * by session (OVOS-COMMON-QUERY-1 §6.3, §7.1; OVOS-FALLBACK-1 §6.1, replies derived with the session), and one
   * session's pongs, answers, timeouts and handled never decide another's.
   */
  readonly sessions?: number;
}

/** The file a deployer hands `test-timing --skills FILE`: a roster, and optionally the questions to ask it. */
export interface SkillsFile {
  readonly skills: readonly SkillScript[];
  /** Default: one question, "what is the speed of light". */
  readonly utterances?: readonly string[];
  /** Each question asked in this many sessions at once (1–16; default 1): see `TimingScenario.sessions`. */
  readonly sessions?: number;
}
