/**
 * Diagrams generated from the machines themselves (not drawn by hand): a walker over `machine.root` that emits
 * Mermaid `stateDiagram-v2`. It renders what `toDirectedGraph` drops: `always` edges, named
 * delays (`after pingTimeout`), invoke done/error edges, guards (including `and`/`or`/`not`), actions and final
 * states.
 */
import type { AnyStateMachine } from 'xstate';

interface NodeLike {
  readonly id: string;
  readonly key: string;
  readonly type: string;
  readonly states: Record<string, NodeLike>;
  readonly initial?: { readonly target: readonly NodeLike[] } | undefined;
  readonly transitions: Map<string, readonly TransitionLike[]>;
  readonly always?: readonly TransitionLike[] | undefined;
  readonly invoke: ReadonlyArray<{ readonly src: unknown; readonly id: string }>;
  readonly after: ReadonlyArray<{ readonly eventType: string; readonly delay: unknown }>;
}

interface TransitionLike {
  readonly eventType: string;
  readonly target?: readonly NodeLike[] | undefined;
  readonly guard?: unknown;
  readonly actions: readonly unknown[];
  readonly reenter: boolean;
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const inner = (guard as { guards?: unknown[]; guard?: unknown }).guards;
    const op = guard.name === 'and' ? ' && ' : guard.name === 'or' ? ' || ' : undefined;
    if (Array.isArray(inner) && op !== undefined) return inner.map(guardName).join(op);
    if (guard.name === 'not') return `!${guardName((guard as { guards?: unknown[] }).guards?.[0]) ?? '?'}`;
    return guard.name || 'guard';
  }
  if (typeof guard === 'object' && 'type' in guard && typeof (guard as { type: unknown }).type === 'string') {
    return (guard as { type: string }).type;
  }
  return 'guard';
}

function actionName(action: unknown): string | undefined {
  if (typeof action === 'string') return action;
  if (typeof action === 'object' && action !== null && 'type' in action) return String((action as { type: unknown }).type);
  if (typeof action === 'function') return action.name && !action.name.startsWith('xstate.') ? action.name : undefined;
  return undefined;
}

function stateName(node: NodeLike): string {
  return node.id.replace(/[^A-Za-z0-9_]/g, '_');
}

function eventLabel(node: NodeLike, eventType: string): string {
  const after = node.after.find((a) => a.eventType === eventType);
  if (after !== undefined) return `after ${typeof after.delay === 'string' ? after.delay : `${String(after.delay)} ms`}`;
  if (eventType.startsWith('xstate.done.actor.')) return `${String(node.invoke[0]?.src ?? 'actor')} done`;
  if (eventType.startsWith('xstate.error.actor.')) return `${String(node.invoke[0]?.src ?? 'actor')} error`;
  return eventType;
}

/** A machine as a graph: what both renderers draw. */
export interface MachineGraph {
  readonly id: string;
  readonly states: ReadonlyArray<{ readonly name: string; readonly key: string; readonly parent: string | null; readonly compound: boolean; readonly final: boolean; readonly invokes: readonly string[] }>;
  /** `parent` (null for the machine) → its initial child. */
  readonly initials: ReadonlyArray<{ readonly parent: string | null; readonly target: string }>;
  readonly edges: ReadonlyArray<{ readonly from: string; readonly to: string; readonly event: string; readonly guard?: string; readonly actions: readonly string[]; readonly stays: boolean; readonly delay?: string }>;
  /** Transitions on the machine itself: they apply in every state that does not handle the event. */
  readonly global: readonly string[];
  /** Named delays used by `after` transitions, in order of appearance. */
  readonly delays: readonly string[];
}

export function machineGraph(machine: AnyStateMachine): MachineGraph {
  const root = machine.root as unknown as NodeLike;
  const states: Array<MachineGraph['states'][number]> = [];
  const initials: Array<MachineGraph['initials'][number]> = [];
  const edgeList: Array<MachineGraph['edges'][number]> = [];
  const delays: string[] = [];
  const visit = (node: NodeLike, parent: string | null): void => {
    const children = Object.values(node.states);
    for (const child of children) {
      states.push({ name: stateName(child), key: child.key, parent, compound: Object.keys(child.states).length > 0, final: child.type === 'final', invokes: child.invoke.map((i) => String(i.src)) });
      if (Object.keys(child.states).length > 0) visit(child, stateName(child));
    }
    const initial = node.initial?.target[0];
    if (initial !== undefined) initials.push({ parent, target: stateName(initial) });
    for (const child of children) {
      const add = (t: TransitionLike, event: string, delay?: string): void => {
        const guard = guardName(t.guard);
        const actions = t.actions.map(actionName).filter((a): a is string => a !== undefined);
        const targets = t.target ?? [];
        const base = { event, actions, ...(guard === undefined ? {} : { guard }), ...(delay === undefined ? {} : { delay }) };
        if (targets.length === 0) edgeList.push({ from: stateName(child), to: stateName(child), stays: true, ...base });
        for (const target of targets) edgeList.push({ from: stateName(child), to: stateName(target), stays: false, ...base });
      };
      for (const [eventType, list] of child.transitions) {
        const after = child.after.find((a) => a.eventType === eventType);
        const delay = after !== undefined && typeof after.delay === 'string' ? after.delay : undefined;
        if (delay !== undefined && !delays.includes(delay)) delays.push(delay);
        for (const t of list) add(t, eventLabel(child, eventType), delay);
      }
      for (const t of child.always ?? []) add(t, 'always');
    }
  };
  visit(root, null);
  const global: string[] = [];
  // Transitions of the machine itself (taken in whatever state it is): event [guard] / actions → target.
  for (const [eventType, list] of root.transitions) {
    const after = root.after.find((a) => a.eventType === eventType);
    if (after !== undefined && typeof after.delay === 'string' && !delays.includes(after.delay)) delays.push(after.delay);
    for (const t of list) {
      const guard = guardName(t.guard);
      const actions = t.actions.map(actionName).filter((a): a is string => a !== undefined);
      const targets = (t.target ?? []).map((target) => target.key);
      global.push([eventLabel(root, eventType), guard === undefined ? '' : `[${guard}]`, actions.length ? `/ ${actions.join(', ')}` : '', targets.length ? `→ ${targets.join(', ')}` : ''].filter(Boolean).join(' '));
    }
  }
  return { id: root.id, states, initials, edges: edgeList, global, delays };
}

function edgeText(edge: MachineGraph['edges'][number]): string {
  return [edge.event, edge.guard ? `[${edge.guard}]` : '', edge.actions.length ? `/ ${edge.actions.join(', ')}` : ''].filter(Boolean).join(' ');
}

/** Mermaid stateDiagram-v2 for a machine. Deterministic: the same machine always gives the same text. */
export function toMermaid(machine: AnyStateMachine): string {
  const graph = machineGraph(machine);
  const lines = ['stateDiagram-v2', `  %% generated from machine "${graph.id}" by src/inspect/diagram.ts — do not edit`];
  const block = (parent: string | null, indent: string): void => {
    const children = graph.states.filter((st) => st.parent === parent);
    for (const child of children) {
      lines.push(child.invokes.length ? `${indent}${child.name} : ${child.key} (invokes ${child.invokes.join(', ')})` : `${indent}${child.name} : ${child.key}`);
      if (child.compound) {
        lines.push(`${indent}state ${child.name} {`);
        block(child.name, `${indent}  `);
        lines.push(`${indent}}`);
      }
      if (child.final) lines.push(`${indent}${child.name} --> [*]`);
    }
    const initial = graph.initials.find((i) => i.parent === parent);
    if (initial !== undefined) lines.push(`${indent}[*] --> ${initial.target}`);
    for (const child of children) {
      for (const edge of graph.edges.filter((e) => e.from === child.name)) lines.push(`${indent}${edge.from} --> ${edge.to} : ${edgeText(edge)}${edge.stays ? ' (stays)' : ''}`);
    }
  };
  block(null, '  ');
  const initial = graph.initials.find((i) => i.parent === null);
  if (graph.global.length > 0 && initial !== undefined) {
    lines.push(`  note right of ${initial.target}`, '    in any state otherwise:', ...graph.global.map((g) => `    ${g}`), '  end note');
  }
  return `${lines.join('\n')}\n`;
}

/** A DOT string: quotes escaped; labels may use DOT's escapes (`\n` a centred, `\l` a left-justified line break). */
const dotString = (text: string): string => `"${text.replace(/"/g, '\\"')}"`;

/**
 * Graphviz DOT for a machine (rendered to SVG by `dot`, visualizations/generate.ts): compound states as clusters,
 * final states double-circled, each named delay labelled with its value (`delays`: name → ms).
 */
export function toDot(machine: AnyStateMachine, delays: Readonly<Record<string, number>> = {}): string {
  const graph = machineGraph(machine);
  const lines = [
    `digraph ${dotString(graph.id)} {`,
    `  // generated from machine "${graph.id}" by src/inspect/diagram.ts — do not edit`,
    '  graph [rankdir=LR, fontname="Helvetica", fontsize=11, compound=true];',
    '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  const compound = (name: string): boolean => graph.states.find((st) => st.name === name)?.compound === true;
  const startOf = (parent: string | null): string => `${parent ?? graph.id}__initial`.replace(/[^A-Za-z0-9_]/g, '_');
  const labelOf = (edge: MachineGraph['edges'][number]): string => {
    const value = edge.delay === undefined ? undefined : delays[edge.delay];
    return value === undefined ? edgeText(edge) : edgeText(edge).replace(`after ${edge.delay}`, `after ${edge.delay} (${value} ms)`);
  };
  // Transitions that stay in (or re-enter) their state are listed inside it, as UML internal transitions: loops
  // drawn by dot would pile their labels on top of each other.
  const internal = (name: string): string => {
    const own = graph.edges.filter((e) => e.from === name && e.to === name).map((e) => `${labelOf(e)}\\l`);
    return own.length === 0 ? '' : `\\n${own.join('')}`;
  };
  const block = (parent: string | null, indent: string): void => {
    const initial = graph.initials.find((i) => i.parent === parent);
    if (initial !== undefined) lines.push(`${indent}${startOf(parent)} [shape=point, width=0.12, label=""];`);
    for (const child of graph.states.filter((st) => st.parent === parent)) {
      if (child.compound) {
        lines.push(`${indent}subgraph cluster_${child.name} {`, `${indent}  label=${dotString(`${child.key}${internal(child.name)}`)}; labeljust=l; style="rounded";`);
        block(child.name, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        const label = `${child.key}${child.invokes.length ? `\\ninvokes ${child.invokes.join(', ')}` : ''}${internal(child.name)}`;
        lines.push(`${indent}${child.name} [label=${dotString(label)}${child.final ? ', shape=doublecircle, style=""' : ''}];`);
      }
    }
    if (initial !== undefined) lines.push(`${indent}${startOf(parent)} -> ${compound(initial.target) ? `${startOf(initial.target)} [lhead=cluster_${initial.target}]` : initial.target};`);
  };
  block(null, '  ');
  for (const edge of graph.edges) {
    if (edge.from === edge.to) continue; // drawn inside the state (above)
    // A compound state's own transitions leave (or enter) its cluster: drawn from its initial point, clipped to it.
    const tail = compound(edge.from) ? startOf(edge.from) : edge.from;
    const head = compound(edge.to) ? startOf(edge.to) : edge.to;
    const clip = [compound(edge.from) ? `ltail=cluster_${edge.from}` : '', compound(edge.to) ? `lhead=cluster_${edge.to}` : ''].filter(Boolean);
    lines.push(`  ${tail} -> ${head} [label=${dotString(labelOf(edge))}${clip.length ? `, ${clip.join(', ')}` : ''}];`);
  }
  if (graph.global.length > 0) lines.push(`  __global [shape=note, label=${dotString(`${['in any state otherwise:', ...graph.global].join('\\l')}\\l`)}];`);
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
