// The inspector page: one websocket (/feed), plain DOM, no framework and no build step. Everything shown comes
// from the bus, so it is untrusted text: it is only ever set as textContent, never parsed as HTML. The diagrams
// are the daemon's own SVG files (visualizations/), highlighted by their node titles (DOT names of the states).

const state = {
  utterances: new Map(), // key → UtteranceView
  order: [], // keys, newest first
  decisions: [],
  strays: [],
  system: { pipeline: [], stages: {}, registry: [], roster: [] },
  selected: null,
  filter: '',
};
const diagrams = new Map(); // machine → Promise<string> (SVG text)

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const ms = (value) => `${Number(value).toFixed(value % 1 === 0 ? 0 : 1)}`;
const shown = (u) => state.filter === '' || u.session_id.includes(state.filter);
const outcomeOf = (u) => (u.decision ? u.decision.outcome : u.live ? 'live' : 'ended');

function diagram(machine) {
  if (!diagrams.has(machine)) diagrams.set(machine, fetch(`/diagrams/${machine}.svg`).then((r) => (r.ok ? r.text() : '')));
  return diagrams.get(machine);
}

function highlight(container, active) {
  const wanted = new Set(active);
  let leaf = null;
  for (const group of container.querySelectorAll('g.node, g.cluster')) {
    const title = group.querySelector(':scope > title')?.textContent ?? '';
    group.classList.toggle('active', wanted.has(title));
    if (wanted.has(title) && group.classList.contains('node')) leaf = group;
  }
  // Diagrams are drawn at their natural size in a scrolling box: bring the current state into view.
  if (leaf !== null) {
    const box = container.getBoundingClientRect();
    const node = leaf.getBoundingClientRect();
    container.scrollLeft += node.left - box.left - (box.width - node.width) / 2;
    container.scrollTop += node.top - box.top - (box.height - node.height) / 2;
  }
}

function merge(utterances) {
  for (const u of utterances) {
    if (!state.utterances.has(u.key)) state.order.unshift(u.key);
    state.utterances.set(u.key, u);
  }
  // The daemon keeps a ring; so does the page (same bound, newest first).
  while (state.order.length > 500) state.utterances.delete(state.order.pop());
}

function renderUtterances() {
  const list = $('utterances');
  list.replaceChildren(
    ...state.order
      .map((key) => state.utterances.get(key))
      .filter(shown)
      .map((u) =>
        el(
          'li',
          { class: u.key === state.selected ? 'selected' : '', 'data-key': u.key, 'data-testid': 'utterance', onclick: () => select(u.key, false) },
          el('div', {}, u.utterance || '(no text)'),
          el('div', { class: 'meta' }, el('span', { class: `badge ${outcomeOf(u)}` }, outcomeOf(u)), ' ', u.session_id, ' · ', new Date(u.time).toLocaleTimeString()),
        ),
      ),
  );
}

function renderContest(contest) {
  const box = el('div', { class: 'diagram', 'data-testid': 'diagram' });
  const card = el(
    'div',
    { class: 'contest', 'data-testid': 'contest', 'data-kind': contest.kind, 'data-status': contest.status },
    el('h3', {}, `${contest.kind} / ${contest.label} `, el('span', { class: `badge ${contest.status}` }, contest.status + (contest.reason ? `: ${contest.reason}` : ''))),
    el('div', {}, 'state ', el('span', { class: 'state', 'data-testid': 'contest-state' }, contest.state), ` · from ${ms(contest.startedAt)} ms`, contest.endedAt === undefined ? '' : ` to ${ms(contest.endedAt)} ms`),
    box,
  );
  if (contest.machine) {
    diagram(contest.machine).then((svg) => {
      box.innerHTML = svg; // the daemon's own file, not bus data
      highlight(box, contest.active);
    });
  }
  return card;
}

function renderDetail() {
  const detail = $('detail');
  const u = state.selected === null ? undefined : state.utterances.get(state.selected);
  if (u === undefined) return;
  const trace = `/api/trace?session=${encodeURIComponent(u.session_id)}&utterance=${encodeURIComponent(u.utterance_id)}`;
  const rows = u.timeline.map((entry) =>
    el(
      'tr',
      { class: entry.kind, 'data-testid': 'timeline-entry', 'data-kind': entry.kind },
      el('td', { class: 'num' }, ms(entry.at)),
      el('td', {}, entry.kind),
      el('td', {}, entry.type),
      el('td', {}, entry.skill_id ?? ''),
      el('td', {}, entry.contest ?? ''),
      el('td', {}, [entry.reason, entry.detail].filter(Boolean).join(' · ')),
    ),
  );
  const decision = u.decision;
  detail.replaceChildren(
    el('a', { class: 'export', href: trace, download: `trace-${u.session_id}-${u.utterance_id}.json`, 'data-testid': 'export-trace' }, 'export trace (JSON)'),
    el('h3', { 'data-testid': 'detail-utterance' }, u.utterance || '(no text)'),
    el(
      'div',
      { class: 'meta' },
      `session ${u.session_id} · utterance_id ${u.utterance_id} · `,
      el('span', { class: `badge ${outcomeOf(u)}`, 'data-testid': 'detail-outcome' }, outcomeOf(u)),
      decision && decision.skill_id ? ` by ${decision.skill_id} (${decision.stage})` : '',
      decision && decision.answer ? ` — “${decision.answer}”` : '',
      decision && decision.answered_by ? ` (answer of ${decision.answered_by})` : '',
      decision && decision.skill_id === null && decision.declined.length > 0 ? ` — ${whyNot(decision)}` : '',
    ),
    el('div', { class: 'contests' }, u.contests.map(renderContest)),
    el('h2', {}, 'Timeline'),
    u.detailed ? '' : el('p', { class: 'empty', 'data-testid': 'not-detailed' }, 'Recorded while no page was open: messages, drops, each contest\'s final state and the decision; state changes on the way and timeouts are recorded while a page is connected.'),
    el('table', { 'data-testid': 'timeline' }, el('thead', {}, el('tr', {}, ['ms', 'what', 'topic / state', 'skill', 'contest', 'reason'].map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    u.truncated > 0 ? el('p', { class: 'empty' }, `${u.truncated} more entries not kept (per-utterance bound)`) : '',
  );
}

/** Why nothing matched: each stage asked and what it gave. */
const whyNot = (d) => (d.declined.length === 0 ? '—' : d.declined.map((x) => `${x.stage}: ${x.why}`).join(', '));

function renderSide() {
  $('decisions').tBodies[0].replaceChildren(
    ...state.decisions
      .filter(shown)
      .map((d) =>
        el(
          'tr',
          { 'data-testid': 'decision', onclick: () => select(d.key, false) },
          el('td', {}, d.session_id),
          el('td', {}, d.utterance),
          el('td', {}, el('span', { class: `badge ${d.outcome}` }, d.outcome)),
          el('td', {}, d.skill_id ? `${d.skill_id} (${d.stage})` : whyNot(d)),
          el('td', { class: 'num' }, ms(d.afterMs)),
        ),
      ),
  );
  const omitted = (state.system.registryTotal ?? state.system.registry.length) - state.system.registry.length;
  $('registry').tBodies[0].replaceChildren(
    ...(omitted > 0 ? [el('tr', { 'data-testid': 'registry-omitted' }, el('td', { colspan: '7' }, `${omitted} more registrations not shown (the first ${state.system.registry.length}, "default" first)`))] : []),
    ...state.system.registry.map((r) =>
      el(
        'tr',
        { 'data-testid': 'registry-row', 'data-skill': r.skill_id },
        el('td', {}, r.skill_id),
        el('td', {}, r.session_id),
        el('td', { class: 'num' }, r.priority === r.effective_priority ? r.priority : `${r.priority} → ${r.effective_priority}`),
        el('td', {}, r.stage ?? 'none (never asked)'),
        el('td', {}, r.dialect),
        el('td', {}, r.dormant ? 'dormant (missed a ping while not heard from: back once heard)' : r.away ? 'away (its connection closed)' : r.maybe_back ? 'maybe back (not heard since its connection closed or a restart)' : (r.connection ?? '—')),
        el('td', {}, r.breaker === 'closed' ? 'ok' : r.breaker === 'open' ? 'suspended' : 'probing'),
      ),
    ),
  );
  $('roster').tBodies[0].replaceChildren(
    ...state.system.roster.map((r) => el('tr', { 'data-testid': 'roster-row' }, el('td', {}, r.skill_id), el('td', {}, r.answersEveryPoll ? 'yes' : 'not yet'))),
  );
  renderCluster(state.system.cluster);
  $('strays').tBodies[0].replaceChildren(
    ...state.strays.map((s) => el('tr', { class: 'drop', 'data-testid': 'stray' }, el('td', {}, s.reason), el('td', {}, s.type), el('td', {}, s.session_id ?? '—'), el('td', {}, s.skill_id ?? '—'))),
  );
}

/** A daemon of a cluster: which daemon owns which partitions, and where each recent session runs. */
function renderCluster(cluster) {
  $('cluster-panel').hidden = cluster === undefined;
  if (cluster === undefined) return;
  $('cluster-summary').textContent =
    `this daemon: ${cluster.node}, owns ${cluster.owned.length} of ${cluster.partitions} partitions · daemons: ${cluster.members.join(', ')}` +
    ` · waiting for an owner: ${cluster.waiting} · failovers: ${cluster.failovers} · fenced: ${cluster.fenced} · frames lost: ${cluster.framesLost} · invalid dropped: ${cluster.invalid} · kept off NATS: ${cluster.keptHere}`;
  const byOwner = new Map();
  cluster.owners.forEach((owner, partition) => byOwner.set(owner ?? 'none', [...(byOwner.get(owner ?? 'none') ?? []), partition]));
  $('cluster-owners').tBodies[0].replaceChildren(
    ...[...byOwner].sort().map(([owner, partitions]) => el('tr', { 'data-testid': 'cluster-owner' }, el('td', {}, owner === cluster.node ? `${owner} (this one)` : owner), el('td', {}, partitions.join(' ')))),
  );
  $('cluster-sessions').tBodies[0].replaceChildren(
    ...cluster.sessions.map((s) => el('tr', { 'data-testid': 'cluster-session' }, el('td', {}, s.session_id), el('td', { class: 'num' }, s.partition), el('td', {}, s.owner ?? 'none'))),
  );
}

function select(key, follow) {
  state.selected = key;
  $('follow').checked = follow;
  renderUtterances();
  renderDetail();
}

function render(changedKeys) {
  const newest = state.order.map((key) => state.utterances.get(key)).find(shown);
  if ($('follow').checked && newest !== undefined && newest.key !== state.selected) state.selected = newest.key;
  renderUtterances();
  if (changedKeys === null || changedKeys.has(state.selected)) renderDetail();
  renderSide();
}

function connect() {
  const socket = new WebSocket(`ws://${location.host}/feed`);
  socket.addEventListener('open', () => {
    $('status').textContent = 'live';
    $('status').classList.add('up');
  });
  socket.addEventListener('close', () => {
    $('status').textContent = 'disconnected — retrying';
    $('status').classList.remove('up');
    setTimeout(connect, 1000);
  });
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(event.data);
    if (message.type === 'hello') {
      state.utterances.clear();
      state.order = [];
      merge([...message.utterances].reverse());
      state.decisions = message.decisions;
      state.strays = message.strays;
      state.system = message.system;
      render(null);
      return;
    }
    merge(message.utterances);
    if (message.decisions) state.decisions = message.decisions;
    if (message.strays) state.strays = message.strays;
    if (message.system) state.system = message.system;
    render(new Set(message.utterances.map((u) => u.key)));
  });
}

$('session-filter').addEventListener('input', (event) => {
  state.filter = event.target.value.trim();
  render(null);
});
$('follow').addEventListener('change', () => render(null));
connect();
