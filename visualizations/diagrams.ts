/** Which machine goes to which diagram file. */
import { commonQueryMachine } from '../machines/common-query/common-query.machine.js';
import { fallbackMachine } from '../machines/fallback/fallback.machine.js';
import { utteranceMachine } from '../machines/utterance/utterance.machine.js';
import { toMermaid } from '../src/inspect/diagram.js';

export function diagrams(): Record<string, string> {
  return {
    'fallback.machine.mmd': toMermaid(fallbackMachine),
    'common-query.machine.mmd': toMermaid(commonQueryMachine),
    'utterance.machine.mmd': toMermaid(utteranceMachine),
  };
}
