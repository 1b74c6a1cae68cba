/**
 * Diagrams generated from the machines themselves (not drawn by hand): a walker over `machine.root` that emits
 * Mermaid `stateDiagram-v2`. It renders what `toDirectedGraph` drops (ENGINEERING-NOTES): `always` edges, named
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

function edges(node: NodeLike, lines: string[], indent: string): void {
  const emit = (t: TransitionLike, label: string): void => {
    const guard = guardName(t.guard);
    const actions = t.actions.map(actionName).filter((a): a is string => a !== undefined);
    const text = [label, guard ? `[${guard}]` : '', actions.length ? `/ ${actions.join(', ')}` : ''].filter(Boolean).join(' ');
    const targets = t.target ?? [];
    if (targets.length === 0) {
      lines.push(`${indent}${stateName(node)} --> ${stateName(node)} : ${text} (stays)`);
      return;
    }
    for (const target of targets) lines.push(`${indent}${stateName(node)} --> ${stateName(target)} : ${text}`);
  };
  for (const [eventType, list] of node.transitions) for (const t of list) emit(t, eventLabel(node, eventType));
  for (const t of node.always ?? []) emit(t, 'always');
}

function walk(node: NodeLike, lines: string[], indent: string): void {
  const children = Object.values(node.states);
  for (const child of children) {
    const name = stateName(child);
    const invoked = child.invoke.map((i) => String(i.src));
    if (invoked.length) lines.push(`${indent}${name} : ${child.key} (invokes ${invoked.join(', ')})`);
    else lines.push(`${indent}${name} : ${child.key}`);
    if (Object.keys(child.states).length > 0) {
      lines.push(`${indent}state ${name} {`);
      walk(child, lines, `${indent}  `);
      lines.push(`${indent}}`);
    }
    if (child.type === 'final') lines.push(`${indent}${name} --> [*]`);
  }
  const initial = node.initial?.target[0];
  if (initial !== undefined) lines.push(`${indent}[*] --> ${stateName(initial)}`);
  for (const child of children) edges(child, lines, indent);
}

/** Mermaid stateDiagram-v2 for a machine. Deterministic: the same machine always gives the same text. */
export function toMermaid(machine: AnyStateMachine): string {
  const root = machine.root as unknown as NodeLike;
  const lines = ['stateDiagram-v2', `  %% generated from machine "${root.id}" by src/inspect/diagram.ts — do not edit`];
  walk(root, lines, '  ');
  // Transitions on the machine itself apply in every state that does not handle the event: one note says so.
  const global: string[] = [];
  for (const [eventType, list] of root.transitions) {
    for (const t of list) {
      const actions = t.actions.map(actionName).filter((a): a is string => a !== undefined);
      global.push(`${eventType}${actions.length ? ` / ${actions.join(', ')}` : ''}`);
    }
  }
  const initial = root.initial?.target[0];
  if (global.length > 0 && initial !== undefined) {
    lines.push(`  note right of ${stateName(initial)}`, '    in any state otherwise:', ...global.map((g) => `    ${g}`), '  end note');
  }
  return `${lines.join('\n')}\n`;
}
