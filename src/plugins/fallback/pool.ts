/**
 * Pool construction, OVOS-FALLBACK-1 §5, as a pure function. Ties in priority are broken by skill_id ascending
 * (code-unit order) — never by arrival order, so the same registry always yields the same pool.
 */
import type { FallbackMode, PriorityRange } from '../../config/defaults.js';

export interface PoolInput {
  /** Everything registered and available to this session (§3.4), skill_id → registered priority. */
  readonly available: ReadonlyMap<string, number>;
  /** Deployer priority overrides (ovos-core `fallback_priorities`); they replace the registered priority. */
  readonly priorityOverrides?: Readonly<Record<string, number>>;
  /** `session.fallback_handlers` (§4). */
  readonly preference?: readonly string[];
  /** This stage's inclusive range (§8.2); absent for a single-stage deployment. */
  readonly range?: PriorityRange;
  /** Every stage's range (with `range`): a priority none covers is placed in the nearest stage (`stageTakes`); absent, none is. */
  readonly stages?: readonly PriorityRange[];
  /** `session.blacklisted_skills` (OVOS-SESSION-1 §3). */
  readonly blacklistedSkills: readonly string[];
  /** Deployment access control (ovos-core `fallback_mode`). */
  readonly mode?: FallbackMode;
  readonly whitelist?: readonly string[];
  readonly blacklist?: readonly string[];
}

export interface PoolEntry {
  readonly skill_id: string;
  readonly priority: number;
}

/** §5 step 1: priority ascending, ties by skill_id — never equal: the entries come from one Map's keys. */
const byPriorityThenId = (a: PoolEntry, b: PoolEntry): number => a.priority - b.priority || (a.skill_id < b.skill_id ? -1 : 1);

export function buildPool(input: PoolInput): PoolEntry[] {
  // Own keys only: a skill named "constructor" must not read Object.prototype's.
  const overrides = input.priorityOverrides;
  const priorityOf = (skillId: string): number | undefined =>
    (overrides !== undefined && Object.hasOwn(overrides, skillId) ? overrides[skillId] : undefined) ?? input.available.get(skillId);

  // §5 step 1 (preference): the session's list leads, in its order (first mention wins); every other skill
  // follows by priority ascending. A listed skill that is not registered has no priority and no place (step 3).
  const ordered: PoolEntry[] = [];
  const placed = new Set<string>();
  for (const skillId of input.preference ?? []) {
    const priority = priorityOf(skillId);
    if (priority === undefined || placed.has(skillId)) continue;
    placed.add(skillId);
    ordered.push({ skill_id: skillId, priority });
  }
  const rest: PoolEntry[] = [];
  for (const skillId of input.available.keys()) {
    if (!placed.has(skillId)) rest.push({ skill_id: skillId, priority: priorityOf(skillId)! });
  }
  ordered.push(...rest.sort(byPriorityThenId));

  // §5 step 2 (stage range, inclusive), step 3 (availability: only registered skills made it this far),
  // step 4 (policy: session denylist, then the deployment's fallback_mode).
  const denied = new Set(input.blacklistedSkills);
  const whitelist = new Set(input.whitelist ?? []);
  const blacklist = new Set(input.blacklist ?? []);
  return ordered.filter(({ skill_id, priority }) => {
    if (input.range !== undefined && !stageTakes(priority, input.range, input.stages ?? [])) return false;
    if (!input.available.has(skill_id)) return false;
    if (denied.has(skill_id)) return false;
    if (input.mode === 'whitelist' && !whitelist.has(skill_id)) return false;
    if (input.mode === 'blacklist' && blacklist.has(skill_id)) return false;
    return true;
  });
}

/**
 * §5 step 2 — whether the stage with `range` asks a skill of `priority` — with our placement rule for a priority no
 * stage covers (§3.3 leaves the ranges to the deployment, and a registration nobody can ever ask helps no one): the
 * deployment's stages are read as covering every priority, so a priority in a gap between ranges or beyond their ends
 * belongs to the nearest stage; at equal distance to the later one (higher numbers: §3.3's "register at a higher
 * number rather than a lower one"). A priority some stage covers belongs to every stage that covers it, as before.
 * With no `stages` given nothing is placed: the range alone decides.
 */
export function stageTakes(priority: number, range: PriorityRange, stages: readonly PriorityRange[]): boolean {
  if (priority >= range[0] && priority <= range[1]) return true;
  if (stages.length === 0 || stages.some(([min, max]) => priority >= min && priority <= max)) return false;
  const distance = ([min, max]: PriorityRange): number => (priority < min ? min - priority : priority - max);
  let nearest = stages[0]!;
  for (const stage of stages) {
    const d = distance(stage);
    const best = distance(nearest);
    if (d < best || (d === best && stage[1] > nearest[1])) nearest = stage;
  }
  return nearest[0] === range[0] && nearest[1] === range[1];
}
