/**
 * The defaults: what the schema (schema.ts) gives for an empty config — every key's default is declared there, next
 * to its constraint and meaning. `loadConfig` (config.ts) layers the deployment's mycroft.conf, a JSON
 * file, environment variables and flags over them.
 */
import { ConfigSchema, freezeConfig, type Config } from './schema.js';

export type { Config, FallbackMode, GateConfig, PriorityRange } from './schema.js';

/** Every key at its default; deep-frozen, records with a null prototype. */
export const DEFAULT_CONFIG: Config = freezeConfig(ConfigSchema.parse({}));

/** OVOS names accepted as aliases of our pipeline ids (ovos-wire-today.md). */
export const PIPELINE_ALIASES: Readonly<Record<string, string>> = {
  'ovos-fallback-pipeline-plugin-high': 'fallback_high',
  'ovos-fallback-pipeline-plugin-medium': 'fallback_medium',
  'ovos-fallback-pipeline-plugin-low': 'fallback_low',
  'ovos-common-query-pipeline-plugin': 'common_query',
  common_qa: 'common_query', // ovos-core's legacy name (ovos-wire-today.md)
};

/** Our pipeline id for an id from a session or config (own keys only: "constructor" is not an alias). */
export function canonicalPipelineId(id: string): string {
  return Object.hasOwn(PIPELINE_ALIASES, id) ? PIPELINE_ALIASES[id]! : id;
}
