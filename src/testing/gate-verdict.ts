/**
 * The question gate's verdict on a scenario's utterance (OVOS-COMMON-QUERY-1 §4), as the system will reach it: the
 * timing model takes it as given (the gate is measured on its own corpus, test/README.md).
 */
import type { Config } from '../config/defaults.js';
import { classifyQuestion } from '../plugins/common-query/gate.js';

export function gateAccepts(config: Config, utterance: string): boolean {
  return !config.commonQuery.gate.enabled || classifyQuestion(utterance, config.lang, config.commonQuery.gate).accept;
}
