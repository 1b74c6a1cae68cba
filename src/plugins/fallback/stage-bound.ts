/**
 * When a fallback stage decides, if the skills are still silent: this long after it starts, just before the
 * orchestrator's match bound (OVOS-PIPELINE-1 §4.4: a result after the bound is ignored), so what the skills said by
 * then still counts (OVOS-FALLBACK-1 §6.2; src/plugins/README.md "The match bound never throws a yes away"). 5 ms before the bound,
 * at most a tenth of it.
 */
export function stageBoundMs(matchTimeoutMs: number): number {
  return matchTimeoutMs - Math.min(5, Math.floor(matchTimeoutMs / 10));
}
