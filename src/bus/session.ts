/**
 * The session carrier, OVOS-SESSION-1.
 *
 * `readSession` turns `context.session` into a typed view with defaults. Fields are omissible, never null: a
 * `null` or wrong-typed field reads as omitted (§2) — the real ovos-bus-client sends `blacklisted_skills: null`.
 * A `session` that is not an object is a malformed carrier (§2.5): the message is dropped, never defaulted.
 * The raw object is kept so unknown keys survive propagation (§2.4).
 */
import { isJsonObject, type Json, type JsonObject, type Message } from './message.js';

export const DEFAULT_SESSION_ID = 'default';

export interface ActiveHandler {
  readonly skill_id: string;
  readonly activated_at: number;
}

export interface SessionView {
  readonly sessionId: string;
  readonly lang?: string;
  readonly pipeline?: readonly string[];
  readonly blacklistedPipelines: readonly string[];
  readonly blacklistedSkills: readonly string[];
  readonly blacklistedIntents: readonly string[];
  /** OVOS-FALLBACK-1 §4: absent when not set (or not a list of strings). */
  readonly fallbackHandlers?: readonly string[];
  readonly activeHandlers: readonly ActiveHandler[];
  /**
   * The carrier to propagate: every key as received, unknown keys included (OVOS-SESSION-1 §2.4), except
   * top-level `null` fields — a consumer reads them as omitted and a producer MUST NOT emit `null` (§2), so they
   * are omitted on the way out too.
   */
  readonly raw: JsonObject;
}

export type SessionResult =
  | { readonly ok: true; readonly session: SessionView }
  | { readonly ok: false; readonly reason: 'malformed_carrier' };

function stringList(value: Json | undefined): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  // A list with a non-string entry keeps its strings: one bad entry must not void a denylist.
  return value.filter((entry): entry is string => typeof entry === 'string');
}

function activeHandlers(value: Json | undefined): ActiveHandler[] {
  if (!Array.isArray(value)) return [];
  const handlers: ActiveHandler[] = [];
  for (const entry of value) {
    if (isJsonObject(entry) && typeof entry['skill_id'] === 'string') {
      const at = entry['activated_at'];
      handlers.push({ skill_id: entry['skill_id'], activated_at: typeof at === 'number' ? at : 0 });
    }
  }
  return handlers;
}

/** Parse a session object (already known to be an object). */
export function sessionFromObject(received: JsonObject): SessionView {
  let raw = received;
  for (const key in received) {
    if (received[key] === null) {
      raw = Object.fromEntries(Object.entries(received).filter(([, value]) => value !== null));
      break;
    }
  }
  const id = raw['session_id'];
  const lang = raw['lang'];
  const view: {
    -readonly [K in keyof SessionView]: SessionView[K];
  } = {
    sessionId: typeof id === 'string' && id !== '' ? id : DEFAULT_SESSION_ID,
    blacklistedPipelines: stringList(raw['blacklisted_pipelines']) ?? [],
    blacklistedSkills: stringList(raw['blacklisted_skills']) ?? [],
    blacklistedIntents: stringList(raw['blacklisted_intents']) ?? [],
    activeHandlers: activeHandlers(raw['active_handlers']),
    raw,
  };
  if (typeof lang === 'string' && lang !== '') view.lang = lang;
  const pipeline = stringList(raw['pipeline']);
  if (pipeline !== undefined) view.pipeline = pipeline;
  const fallbackHandlers = stringList(raw['fallback_handlers']);
  if (fallbackHandlers !== undefined) view.fallbackHandlers = fallbackHandlers;
  return view;
}

/** OVOS-SESSION-1 §2.1 / §2.5: absent or `null` carrier → default session; non-object → malformed. */
export function readSession(message: Message): SessionResult {
  const carrier = message.context['session'];
  if (carrier === undefined || carrier === null) return { ok: true, session: sessionFromObject({}) };
  if (!isJsonObject(carrier)) return { ok: false, reason: 'malformed_carrier' };
  return { ok: true, session: sessionFromObject(carrier) };
}

/** The session id a message belongs to, or undefined for a malformed carrier. */
export function sessionIdOf(message: Message): string | undefined {
  const carrier = message.context['session'];
  if (carrier === undefined || carrier === null) return DEFAULT_SESSION_ID;
  if (!isJsonObject(carrier)) return undefined;
  const id = carrier['session_id'];
  return typeof id === 'string' && id !== '' ? id : DEFAULT_SESSION_ID;
}

/**
 * OVOS-SESSION-1 §3.2.7 language precedence: `data.lang` > `stt_lang` > `detected_lang` > `request_lang` >
 * session `lang` > deployment default. The three middle keys are read from the context, where OVOS puts them.
 */
export function resolveLang(message: Message, session: SessionView, defaultLang: string): string {
  const candidates: Array<Json | undefined> = [
    message.data['lang'],
    message.context['stt_lang'],
    message.context['detected_lang'],
    message.context['request_lang'],
    session.lang,
  ];
  for (const candidate of candidates) {
    if (typeof candidate === 'string' && candidate !== '') return candidate;
  }
  return defaultLang;
}

/**
 * OVOS-PIPELINE-1 §7: push `{skill_id, activated_at}` onto the head of `active_handlers`, replacing any older
 * entry of the same skill; every other key of the carrier is kept.
 */
export function pushActiveHandler(session: SessionView, skillId: string, activatedAt: number): JsonObject {
  const rest = session.activeHandlers
    .filter((handler) => handler.skill_id !== skillId)
    .map((handler) => ({ skill_id: handler.skill_id, activated_at: handler.activated_at }));
  return {
    ...session.raw,
    session_id: session.sessionId,
    active_handlers: [{ skill_id: skillId, activated_at: activatedAt }, ...rest],
  };
}
