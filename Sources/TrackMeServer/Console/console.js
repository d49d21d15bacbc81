// The dispatcher console. Data from the server is only ever put on the page as text
// (textContent, attribute values set one by one); no HTML is built from strings.
'use strict';
(() => {
const SEVERE = 4;
// The alarm sounds again this often while an open alert waits for someone to acknowledge it.
const ALARM_EVERY_MS = 4000;
const OUTCOMES = [['help_arrived', 'Help arrived'], ['false_alarm', 'False alarm'], ['wearer_safe', 'Wearer safe'], ['unreachable', 'Could not be reached']];
const state = {
  csrf: null, account: null, config: { tile_url: null, leaflet: false },
  alerts: new Map(), details: new Map(), pending: new Map(), known: new Set(),
  lastEventId: 0, seenEventIds: [], source: null, reconnectTimer: null,
  // The feed is trusted only while the server is heard: an event, or the heartbeat it sends
  // every `heartbeatMs`. `downSince` is when it was last heard once that stopped.
  heartbeatMs: 5000, lastHeard: 0, downSince: null, streamOpenedAt: 0, opens: 0,
  devices: [], history: [], maps: new Map(), cards: new Map(), audio: null, started: false,
};

// ---- DOM helpers: text only ----
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
// Replaces a node's children like `el` fills them: arrays flattened, null left out, text as text.
function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
  return node;
}
function svg(tag, attrs) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}
const $ = (id) => document.getElementById(id);
// A column header; the buttons' column is named for screen readers only.
const header = (h) => el('th', {}, h || el('span', { class: 'visually-hidden' }, 'Actions'));
// Times and the protection badges' words are Pages/protection.js's, shared with the carer's page.
const { ago, problems: protection, automatedSOS, discreet } = Protection;
const clock = (ms) => new Date(ms).toLocaleTimeString();
const label = (kind) => (kind || 'unknown').replace(/_/g, ' ');
// The timeline's events in plain words; an event this page does not know reads as its name.
const EVENT_WORDS = {
  first_critical: 'first critical reading', raised: 'raised on the device', delivered: 'delivered to the server',
  kind_changed: 'kind changed', acknowledged: 'acknowledged', note: 'note by', cancelled: 'cancelled on the device',
  closed_on_device: 'closed on the device', resolved: 'resolved',
  contact_notifying: 'telling contact', contact_notified: 'contact told', contact_failed: 'contact not reached',
};
const eventText = (event) => EVENT_WORDS[event] || label(event);
// A timeline entry's detail: kinds and outcomes read as words, the rest (names, notes) as given.
const CODED = new Set(['first_critical', 'raised', 'kind_changed', 'resolved']);
const detailText = (t) => (!t.detail ? '' : ' — ' + (CODED.has(t.event) ? t.detail.replace(/_/g, ' ') : t.detail));
// How long the alert took to reach the server, counted both ways the service promises it: from the
// first critical reading, and from the reading that completed the rule (the device's raise). A
// device without a set clock has its times placed by the server (see the timeline's note).
function timingText(timeline) {
  const at = (event) => timeline.find((t) => t.event === event);
  const delivered = at('delivered');
  if (!delivered) return 'Not yet at the server.';
  const since = (event) => {
    const t = at(event);
    return t ? ((delivered.at_ms - t.at_ms) / 1000).toFixed(1) + ' s' : 'unknown';
  };
  const placed = ['first_critical', 'raised'].some((e) => at(e) && at(e).time_note);
  return 'Reached the server ' + since('first_critical') + ' after the first critical reading, ' +
    since('raised') + ' after the reading that completed the rule' + (placed ? ' (device clock not set: see the timeline).' : '.');
}

// One timeline entry: its time, what happened, and when the device's clock could not be trusted, why the time is the server's.
const timelineItem = (t) => el('li', { dataset: { event: t.event } }, clock(t.at_ms), ' ', eventText(t.event), detailText(t),
  t.time_note ? el('span', { class: 'time-note' }, ' (', t.time_note, ')') : null);
// The position in OpenStreetMap, for a dispatcher whose console has no map tiles.
const mapsLink = (lat, lon) => { const a = Number(lat).toFixed(5), o = Number(lon).toFixed(5); return 'https://www.openstreetmap.org/?mlat=' + a + '&mlon=' + o + '#map=17/' + a + '/' + o; };
const telLink = (phone) => 'tel:' + String(phone).replace(/[^+0-9]/g, '');

// ---- HTTP ----
async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
  const response = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (response.status === 401) {
    showSignIn('Your session has ended. Please sign in again.');
    throw new Error('signed out');
  }
  if (!response.ok) throw new Error((data && data.error && data.error.message) || response.statusText);
  return data;
}

// ---- sign-in ----
function showSignIn(message) {
  stopStream();
  state.csrf = null; state.account = null; state.started = false;
  $('console').hidden = true;
  $('signin').hidden = false;
  $('signin-message').textContent = message || '';
  document.title = 'TrackMe console — sign in';
}
async function signIn(event) {
  event.preventDefault();
  $('signin-message').textContent = '';
  try {
    const response = await fetch('/v1/session', { method: 'POST', headers: { 'Content-Type': 'application/json' }, credentials: 'same-origin',
      body: JSON.stringify({ username: $('username').value, password: $('password').value }) });
    const data = await response.json().catch(() => null);
    if (!response.ok) { $('signin-message').textContent = (data && data.error && data.error.message) || 'Sign-in failed'; return; }
    $('password').value = '';
    enableSound();
    start(data);
  } catch (e) { $('signin-message').textContent = String(e.message || e); }
}
async function signOut() {
  try { await api('DELETE', '/v1/session'); } catch (e) { /* signed out anyway */ }
  showSignIn('Signed out.');
}

// ---- start ----
async function start(session) {
  // Wearers and organisations have their own page (People/PeoplePages.swift).
  // Each person lands on their own page: wearers, carers and organisations on /people, fleet operators on /fleet.
  const home = { wearer: '/people', carer: '/people', third_party: '/people', fleet_operator: '/fleet' }[session.account.role];
  if (home) { location.replace(home); return; }
  state.csrf = session.csrf_token;
  state.account = session.account;
  state.started = true;
  $('signin').hidden = true;
  $('console').hidden = false;
  $('whoami').textContent = session.account.display_name + ' (' + session.account.role + ')';
  $('accounts-tab').hidden = session.account.role !== 'admin';
  try { state.config = await api('GET', '/v1/console/config'); } catch (e) { /* defaults */ }
  if (state.config.feed_heartbeat_ms) state.heartbeatMs = state.config.feed_heartbeat_ms;
  state.lastHeard = Date.now(); state.downSince = null; state.opens = 0;
  loadLeaflet();
  prepareSound();
  await refreshBoard();
  openStream();
  refreshDevices();
  refreshHistory();
  if (session.account.role === 'admin') refreshAccounts();
}

// ---- the feed ----
// A connection can die without the browser being told (a Wi-Fi or VPN change): the stream then
// stays open and silent. So the page counts only what it hears: when neither an event nor the
// server's heartbeat came for two intervals it says so across the page, drops the stream and
// opens another; every (re)open re-reads the open alerts.
function silenceLimit() { return 2 * state.heartbeatMs + 1000; }
function openStream() {
  stopStream();
  const url = '/v1/alerts/stream' + (state.lastEventId ? '?last_event_id=' + state.lastEventId : '');
  const source = new EventSource(url);
  state.source = source;
  state.streamOpenedAt = Date.now();
  for (const kind of ['alert', 'alert_acknowledged', 'alert_resolved', 'alert_note', 'device_silent', 'device_returned', 'feed_reset']) {
    source.addEventListener(kind, (event) => { heard(); onEvent(kind, event); });
  }
  source.addEventListener('heartbeat', (event) => {
    try { const data = JSON.parse(event.data); if (data.interval_ms > 0) state.heartbeatMs = data.interval_ms; } catch (e) { /* the last interval stands */ }
    heard();
    // The contact notifier's runs reach an alert's timeline with no feed event of their own:
    // each heartbeat reads the open alerts again, so "contact told" shows within one interval.
    for (const id of state.alerts.keys()) loadAlert(id);
  });
  source.onopen = () => {
    heard();
    // Whatever happened while the page could not hear is on the board, even past the replay window.
    if (state.opens++ > 0) refreshBoard().catch(() => {});
  };
  source.onerror = () => {
    showFeed();
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. 401): check the session, then resume after the last id.
      stopStream();
      state.reconnectTimer = setTimeout(async () => {
        try { await api('GET', '/v1/session'); openStream(); } catch (e) { /* sign-in shown */ }
      }, 1000);
    }
  };
  showFeed();
}
function stopStream() {
  if (state.reconnectTimer) { clearTimeout(state.reconnectTimer); state.reconnectTimer = null; }
  if (state.source) { state.source.close(); state.source = null; }
  showFeed();
}
function heard() {
  state.lastHeard = Date.now();
  state.downSince = null;
  showFeed();
}
// Once a second: silence past the limit shows the banner, and a stream that has had the whole
// limit to say something is replaced by a new one.
function watchFeed() {
  if (!state.started) return;
  const now = Date.now();
  if (now - state.lastHeard > silenceLimit()) {
    if (!state.downSince) state.downSince = state.lastHeard;
    if (now - state.streamOpenedAt > silenceLimit()) openStream();
  }
  showFeed();
}
function showFeed() {
  const status = $('feed-status'), banner = $('feed-banner');
  if (!status || !banner) return;
  const open = state.source && state.source.readyState === EventSource.OPEN;
  const live = !!open && !state.downSince && Date.now() - state.lastHeard <= silenceLimit();
  const word = !state.started ? 'offline' : live ? 'live' : state.downSince ? 'not connected' : state.source ? 'connecting' : 'offline';
  if (status.textContent !== word) status.textContent = word;
  status.className = 'feed-status' + (live ? ' live' : state.downSince ? ' down' : '');
  document.body.dataset.feed = word;
  const text = state.started && state.downSince ? 'Not connected since ' + clock(state.downSince) + ' — alerts may be missing' : '';
  if (banner.textContent !== text) banner.textContent = text;
  banner.hidden = !text;
  // An empty board is only news while the page can hear.
  const empty = $('board').querySelector('.empty');
  const none = state.started && state.downSince ? 'No open alerts known: not connected.' : 'No open alerts.';
  if (empty && empty.textContent !== none) empty.textContent = none;
}
function onEvent(kind, event) {
  const id = Number(event.lastEventId);
  if (id && id <= state.lastEventId) return;  // already applied
  if (id) { state.lastEventId = id; state.seenEventIds.push(id); document.body.dataset.lastEventId = String(id); }
  let data = {};
  try { data = JSON.parse(event.data); } catch (e) { return; }
  if (kind === 'feed_reset') {
    // Resumed from before the server's replay window: read the board afresh instead.
    refreshBoard().catch(() => {});
    refreshHistory();
  } else if (kind === 'alert') {
    // The event is a reference; the person comes with the alert's detail.
    const alertID = data.alert_id;
    if (!alertID) return;
    const isNew = !state.known.has(alertID) && data.type === 'raised';
    state.known.add(alertID);
    loadAlert(alertID).then(() => { if (isNew) announce(alertID, data); });
  } else if (kind === 'alert_acknowledged' || kind === 'alert_note') {
    loadAlert(data.alert_id);
  } else if (kind === 'alert_resolved') {
    loadAlert(data.alert_id);
    refreshHistory();
  } else {
    refreshDevices();
  }
}
function nameOf(alert) {
  const detail = state.details.get(alert.alert_id);
  const person = (detail && detail.alert && detail.alert.person) || alert.person;
  return person && person.name ? person.name : alert.device_id;
}
// A new alert: the alarm at once (it repeats until acknowledged), a desktop notification when
// the dispatcher allowed them, and words for screen readers (the title alone is not announced).
function announce(alertID, reference) {
  const alert = state.alerts.get(alertID) || reference;
  const text = 'SOS: ' + nameOf(alert) + ' — ' + label(alert.kind || reference.kind);
  document.body.dataset.lastAnnounced = alertID;
  $('announcer').textContent = text + ', ' + clock(Date.now());
  notify(alertID, text);
  ringAlarm();
  updateTitle();
}
function notify(alertID, text) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  try {
    const note = new Notification(text, { body: 'Open alert on the TrackMe console', tag: alertID, requireInteraction: true });
    note.onclick = () => { window.focus(); note.close(); };
    document.body.dataset.notified = String(Number(document.body.dataset.notified || 0) + 1);
  } catch (e) { /* notifications unavailable here */ }
}
function waitingAlerts() {
  return [...state.alerts.values()].filter((a) => a.open && !a.acknowledged_ms).sort(boardOrder);
}
// The tab names who and what: the gravest alert nobody has acknowledged yet.
function updateTitle() {
  const waiting = waitingAlerts();
  const open = [...state.alerts.values()].filter((a) => a.open).length;
  if (!waiting.length) { document.title = (open ? '(' + open + ' open) ' : '') + 'TrackMe console'; return; }
  const first = waiting[0];
  document.title = 'SOS: ' + nameOf(first) + ' — ' + label(first.kind) + (waiting.length > 1 ? ' (+' + (waiting.length - 1) + ' more)' : '');
}

// ---- sound ----
// Browsers start a page's audio suspended until the person clicks or presses a key on it (after
// a reload too). The page makes its audio at once, and while the browser holds it back shows an
// "Enable sound" button, so a dispatcher knows the alarm would be silent. `data-sound` on the
// body says which: on, blocked or unavailable.
function prepareSound() {
  if (!state.audio) {
    try {
      state.audio = new AudioContext();
      state.audio.addEventListener('statechange', showSound);
    } catch (e) { state.audio = null; }
  }
  showSound();
}
function enableSound() {
  prepareSound();
  if (state.audio && state.audio.state !== 'running') state.audio.resume().then(showSound, showSound);
  if ('Notification' in window && Notification.permission === 'default') {
    try { Notification.requestPermission().then(showSound, () => {}); } catch (e) { /* old API */ }
  }
}
function showSound() {
  const ctx = state.audio;
  const sound = !ctx ? 'unavailable' : ctx.state === 'running' ? 'on' : 'blocked';
  document.body.dataset.sound = sound;
  $('sound-prompt').hidden = sound !== 'blocked' || !state.started;
  $('sound-unavailable').hidden = sound !== 'unavailable' || !state.started;
}
// Every ALARM_EVERY_MS, and at once for a new alert: rings while any open alert waits.
function ringAlarm() {
  const waiting = waitingAlerts().length;
  document.body.dataset.alarm = waiting && state.started ? 'ringing' : 'quiet';
  if (!waiting || !state.started) return;
  if (beep()) document.body.dataset.alarmsPlayed = String(Number(document.body.dataset.alarmsPlayed || 0) + 1);
}
function beep() {
  const ctx = state.audio;
  if (!ctx || ctx.state !== 'running') { showSound(); return false; }
  try {
    for (const [offset, freq] of [[0, 880], [0.25, 660], [0.5, 880]]) {
      const osc = ctx.createOscillator(); const gain = ctx.createGain();
      osc.frequency.value = freq; gain.gain.value = 0.15;
      osc.connect(gain); gain.connect(ctx.destination);
      osc.start(ctx.currentTime + offset); osc.stop(ctx.currentTime + offset + 0.18);
    }
    return true;
  } catch (e) { return false; }
}

// ---- the board ----
async function refreshBoard() {
  const list = await api('GET', '/v1/alerts?status=open');
  // The first time: follow the feed from where this list was read, not from its beginning.
  if (!state.lastEventId) state.lastEventId = list.feed_last_id || 0;
  const listed = new Set(list.alerts.map((a) => a.alert_id));
  // Read again: alerts the page shows that closed while it could not hear.
  const gone = [...state.alerts.keys()].filter((id) => !listed.has(id));
  const fresh = state.opens > 0 ? list.alerts.filter((a) => !state.known.has(a.alert_id)) : [];
  for (const alert of list.alerts) { state.alerts.set(alert.alert_id, alert); state.known.add(alert.alert_id); }
  await Promise.all([...list.alerts.map((a) => loadAlert(a.alert_id)), ...gone.map((id) => loadAlert(id))]);
  for (const alert of fresh) announce(alert.alert_id, alert);
  renderBoard();
}
// One fetch per alert at a time; an event during a fetch fetches again after it.
async function loadAlert(alertID) {
  if (state.pending.has(alertID)) { state.pending.set(alertID, true); return; }
  state.pending.set(alertID, false);
  try {
    do {
      state.pending.set(alertID, false);
      try {
        const detail = await api('GET', '/v1/alerts/' + encodeURIComponent(alertID));
        state.details.set(alertID, detail);
        const wasOpen = state.alerts.has(alertID);
        if (detail.alert.open) state.alerts.set(alertID, detail.alert); else state.alerts.delete(alertID);
        if (wasOpen && !detail.alert.open) refreshHistory();
      } catch (e) { if (e.message === 'signed out') return; }
    } while (state.pending.get(alertID));
  } finally { state.pending.delete(alertID); renderBoard(); }
}
function boardOrder(a, b) { return (b.severity - a.severity) || (b.created_ms - a.created_ms); }
// Cards are built once per alert and updated in place, so a note being typed or a chosen
// outcome survives the 1 Hz position updates.
function renderBoard() {
  const board = $('board');
  const open = [...state.alerts.values()].filter((a) => a.open).sort(boardOrder);
  $('open-count').textContent = String(open.length);
  for (const id of [...state.cards.keys()]) if (!open.some((a) => a.alert_id === id)) { state.cards.delete(id); state.maps.delete('map-' + id); }
  const cards = open.map(updateCard);
  if (!cards.length) {
    if (!board.querySelector('.empty')) board.replaceChildren(el('p', { class: 'empty' }, 'No open alerts.'));
  } else if (cards.length !== board.children.length || cards.some((card, i) => board.children[i] !== card)) {
    board.replaceChildren(...cards);
  }
  for (const alert of open) drawMap(alert.alert_id);
  showFeed();
  updateTitle();
  document.body.dataset.alarm = waitingAlerts().length && state.started ? 'ringing' : 'quiet';
}
// Fills `node` only when `key` changed, so a link or field with the keyboard's focus is not
// replaced under it by the 1 Hz position updates.
const drawnKeys = new WeakMap();
function fillOnChange(node, key, build) {
  if (drawnKeys.get(node) === key) return;
  drawnKeys.set(node, key);
  fill(node, build());
}
function updateCard(alert) {
  let card = state.cards.get(alert.alert_id);
  if (!card) {
    // No outcome is chosen for the dispatcher: Resolve asks for one.
    const outcome = el('select', { class: 'resolve-outcome', 'aria-label': 'Outcome', required: true },
      el('option', { value: '' }, 'Choose the outcome…'), OUTCOMES.map(([value, text]) => el('option', { value }, text)));
    const noteText = el('input', { class: 'note-text', placeholder: 'Add a note', 'aria-label': 'Note', maxlength: 2000 });
    const parts = {
      head: el('div', { class: 'card-head' }),
      position: el('div', { class: 'alert-position' }),
      info: el('div', { class: 'info' }),
      map: el('div', { class: 'map', id: 'map-' + alert.alert_id }),
      chart: el('div', { class: 'chart' }),
      story: el('div', { class: 'story' }),
      ack: el('button', { class: 'ack primary', type: 'button', onclick: () => act(alert.alert_id, 'ack') }, 'Acknowledge'),
      outcome,
      resolveMessage: el('span', { class: 'resolve-message', role: 'alert' }),
    };
    const node = el('article', { class: 'alert-card', dataset: { alertId: alert.alert_id } },
      el('div', { class: 'card-top' }, parts.head, parts.position,
        el('div', { class: 'actions card-actions' }, parts.ack, outcome,
          el('button', { class: 'resolve', type: 'button', onclick: () => resolve(alert.alert_id, outcome, parts.resolveMessage) }, 'Resolve'),
          parts.resolveMessage)),
      parts.info,
      el('div', {}, el('h3', {}, 'Track since the alert opened'), parts.map, el('h3', {}, 'Heart rate, last 10 min'), parts.chart),
      el('div', {}, parts.story,
        el('form', { class: 'actions note-form', onsubmit: (event) => { event.preventDefault(); addNote(alert.alert_id, noteText); } },
          noteText, el('button', { class: 'note-add', type: 'submit' }, 'Add note'))));
    card = { node, parts };
    state.cards.set(alert.alert_id, card);
  }
  const detail = state.details.get(alert.alert_id) || { timeline: [], notes: [], track: [], heart_rate: [], device: null };
  const person = alert.person || {};
  const record = alert.record || {};
  const position = record.position && record.position.fix;
  const fixAt = alert.updated_ms - ((record.position && record.position.age_ms) || 0);
  const classes = ['alert-card'];
  if (alert.severity >= SEVERE) classes.push('severe');
  if (alert.acknowledged_ms) classes.push('acknowledged');
  card.node.className = classes.join(' ');
  card.parts.ack.hidden = !!alert.acknowledged_ms;
  const thresholds = [];
  if (person.resting_hr) thresholds.push('resting ' + person.resting_hr);
  if (person.min_hr) thresholds.push('min ' + person.min_hr);
  if (person.max_hr) thresholds.push('max ' + person.max_hr);
  const health = detail.device;
  const hb = health && health.heartbeat;
  const timeline = detail.timeline || [];
  fillOnChange(card.parts.head, JSON.stringify([person.name, person.age, alert.kind, alert.state, alert.acknowledged_ms, alert.created_ms, alert.device_id]), () => [
    el('div', { class: 'title' }, el('span', { class: 'person-name' }, person.name || alert.device_id), ', ', el('span', { class: 'person-age' }, person.age !== undefined ? String(person.age) : '?')),
    el('div', {}, el('span', { class: 'kind alert-kind' }, label(alert.kind)), ' ', el('span', { class: 'alert-state muted' }, alert.acknowledged_ms ? 'acknowledged' : alert.state)),
    el('div', { class: 'muted' }, 'opened ', el('span', { class: 'age', dataset: { at: alert.created_ms } }, ago(alert.created_ms)), ' · device ', alert.device_id)]);
  fillOnChange(card.parts.position, JSON.stringify(position ? [position.lat, position.lon, fixAt] : null), () => (position && position.lat !== undefined
    ? ['Position ', Number(position.lat).toFixed(5), ', ', Number(position.lon).toFixed(5), ' · fix ', el('span', { class: 'age', dataset: { at: fixAt } }, ago(fixAt)), ' · ',
      el('a', { class: 'open-map', href: mapsLink(position.lat, position.lon), target: '_blank', rel: 'noopener noreferrer' }, 'Open in maps')]
    : 'No position known'));
  // What the contacts were told, from the notifier's runs on the timeline (their details start with the contact's name).
  const told = (c) => {
    const runs = timeline.filter((t) => t.event.startsWith('contact_') && t.detail && (t.detail.startsWith(c.name + ',') || t.detail.startsWith(c.name + ' (')));
    const last = runs[runs.length - 1];
    return last ? el('span', { class: 'contact-status muted' }, ' · ', eventText(last.event), ' ', clock(last.at_ms)) : null;
  };
  fillOnChange(card.parts.info, JSON.stringify([person, health, timeline.filter((t) => t.event.startsWith('contact_'))]), () => [
    el('h3', {}, 'Thresholds'), el('div', {}, thresholds.length ? thresholds.join(' · ') + ' bpm' : 'derived from age'),
    el('h3', {}, 'Emergency contacts'),
    el('ul', { class: 'plain contacts' }, (person.contacts || []).map((c) => el('li', {}, c.name, c.relation ? ' (' + c.relation + ')' : '',
      c.phone ? [' ', el('a', { class: 'contact-call', href: telLink(c.phone) }, c.phone)] : '',
      c.email ? [' ', el('a', { href: 'mailto:' + c.email }, c.email)] : '', told(c)))),
    person.notes ? [el('h3', {}, 'Carer notes'), el('div', { class: 'person-notes' }, person.notes)] : null,
    el('h3', {}, 'Device'),
    el('div', { class: 'device-health' }, hb ? ['strap ', hb.strap, hb.battery_pct !== undefined && hb.battery_pct !== null ? ' · battery ' + hb.battery_pct + '%' : '', ' · GPS ', hb.gpsd] : 'no heartbeat yet',
      hb && hb.device_power ? ' · device ' + devicePower(hb) : null,
      health ? [' · last seen ', el('span', { class: 'age', dataset: { at: health.last_seen_ms } }, ago(health.last_seen_ms))] : null,
      health && health.silent ? [' ', el('span', { class: 'badge' }, 'SILENT')] : null,
      hb ? protection(hb, health && health.last_seen_ms).map((p) => [' ', el('span', { class: 'badge protection' }, p)]) : null,
      automatedSOS(person) ? [' ', el('span', { class: 'badge protection automated-sos-off' }, automatedSOS(person))] : null,
      discreet(person) ? [' ', el('span', { class: 'badge protection discreet-sos' }, discreet(person))] : null),
    el('div', { class: 'automated-sos muted' }, automatedSOSText(person))]);
  fill(card.parts.chart, hrChart(detail.heart_rate || []));
  fillOnChange(card.parts.story, JSON.stringify([timeline, detail.notes]), () => [
    el('p', { class: 'timing' }, timingText(timeline)),
    el('h3', {}, 'Timeline'),
    el('ol', { class: 'timeline' }, timeline.map(timelineItem)),
    el('h3', {}, 'Notes'),
    el('ul', { class: 'plain notes' }, (detail.notes || []).map((n) => el('li', {}, el('span', { class: 'muted' }, n.author + ', ' + clock(n.created_ms) + ': '), el('span', { class: 'note-body' }, n.text))))]);
  return card.node;
}
async function act(alertID, verb) {
  try { await api('POST', '/v1/alerts/' + encodeURIComponent(alertID) + '/' + verb); } catch (e) { report(e); }
  loadAlert(alertID);
}
async function addNote(alertID, input) {
  const text = input.value.trim();
  if (!text) return;
  try { await api('POST', '/v1/alerts/' + encodeURIComponent(alertID) + '/notes', { text }); input.value = ''; } catch (e) { report(e); }
  loadAlert(alertID);
}
// Closing an alert tells the device and ends the contacts' following: it needs a chosen outcome
// and a second yes.
async function resolve(alertID, select, message) {
  const outcome = select.value;
  const chosen = OUTCOMES.find(([value]) => value === outcome);
  if (!chosen) { message.textContent = 'Choose the outcome first.'; select.focus(); return; }
  message.textContent = '';
  const alert = state.alerts.get(alertID);
  if (!window.confirm('Resolve the alert of ' + (alert ? nameOf(alert) : alertID) + ' as "' + chosen[1] + '"? It leaves the board and the device is told.')) return;
  try { await api('POST', '/v1/alerts/' + encodeURIComponent(alertID) + '/resolve', { outcome }); } catch (e) { report(e); }
  await loadAlert(alertID);
  refreshHistory();
}
function report(e) { if (e.message !== 'signed out') { $('feed-status').textContent = 'error: ' + e.message; } }

// ---- heart rate and map ----
function hrChart(points) {
  const chart = svg('svg', { class: 'hr', viewBox: '0 0 600 60', preserveAspectRatio: 'none', role: 'img',
    'aria-label': 'Heart rate, last 10 minutes: ' + (points.length ? points.length + ' readings, last ' + points[points.length - 1].bpm + ' bpm' : 'no readings') });
  if (points.length < 2) { const t = svg('text', { x: 8, y: 35, fill: '#9aa7b4', 'font-size': 14 }); t.textContent = points.length ? points[0].bpm + ' bpm' : 'no readings'; chart.append(t); return chart; }
  const t0 = points[0].at_ms, t1 = points[points.length - 1].at_ms || t0 + 1;
  const max = Math.max(160, ...points.map((p) => p.bpm));
  const coords = points.map((p) => ((p.at_ms - t0) / Math.max(1, t1 - t0) * 600).toFixed(1) + ',' + (58 - p.bpm / max * 56).toFixed(1)).join(' ');
  chart.append(svg('polyline', { points: coords, fill: 'none', stroke: '#e5484d', 'stroke-width': 2 }));
  const last = svg('text', { x: 540, y: 14, fill: '#e8edf2', 'font-size': 12 }); last.textContent = points[points.length - 1].bpm + ' bpm'; chart.append(last);
  return chart;
}
function drawMap(alertID) {
  const box = $('map-' + alertID);
  const detail = state.details.get(alertID);
  if (!box) return;
  const track = (detail && detail.track) || [];
  if (state.config.leaflet && state.config.tile_url && window.L) { drawLeaflet(box, track); return; }
  drawGrid(box, track);
}
// Without tiles: the track on a plain grid with a scale (equirectangular around its middle).
function drawGrid(box, track) {
  const W = 400, H = 200;
  const plot = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: '100%', height: '100%', class: 'grid-map', role: 'img',
    'aria-label': track.length ? 'Track since the alert opened: ' + track.length + ' positions, the last one marked' : 'No position yet' });
  if (!track.length) { const t = svg('text', { x: 12, y: 100, fill: '#9aa7b4', 'font-size': 14 }); t.textContent = 'no position yet'; plot.append(t); box.replaceChildren(plot); return; }
  const lat0 = track.reduce((s, p) => s + p.lat, 0) / track.length;
  const k = Math.cos(lat0 * Math.PI / 180) * 111320;
  const xs = track.map((p) => p.lon * k), ys = track.map((p) => p.lat * 110540);
  const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
  const span = Math.max(50, maxX - minX, (maxY - minY) * W / H) * 1.3;
  const cx = (minX + maxX) / 2, cy = (minY + maxY) / 2, scale = W / span;
  const px = (x) => W / 2 + (x - cx) * scale, py = (y) => H / 2 - (y - cy) * scale;
  const step = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000].find((s) => s * scale >= 40) || 100000;
  for (let g = Math.floor((cx - span) / step) * step; g <= cx + span; g += step) plot.append(svg('line', { x1: px(g), y1: 0, x2: px(g), y2: H, stroke: '#2f3a47' }));
  for (let g = Math.floor((cy - span) / step) * step; g <= cy + span; g += step) plot.append(svg('line', { x1: 0, y1: py(g), x2: W, y2: py(g), stroke: '#2f3a47' }));
  plot.append(svg('polyline', { points: xs.map((x, i) => px(x).toFixed(1) + ',' + py(ys[i]).toFixed(1)).join(' '), fill: 'none', stroke: '#3e8ef7', 'stroke-width': 2 }));
  plot.append(svg('circle', { cx: px(xs[xs.length - 1]), cy: py(ys[ys.length - 1]), r: 5, fill: '#e5484d', class: 'last-position' }));
  plot.append(svg('line', { x1: 10, y1: H - 12, x2: 10 + step * scale, y2: H - 12, stroke: '#e8edf2', 'stroke-width': 2 }));
  const t = svg('text', { x: 10, y: H - 16, fill: '#e8edf2', 'font-size': 11, class: 'scale' }); t.textContent = step >= 1000 ? step / 1000 + ' km' : step + ' m'; plot.append(t);
  box.replaceChildren(plot);
}
function drawLeaflet(box, track) {
  const L = window.L;
  const id = box.id;
  let entry = state.maps.get(id);
  if (!entry || entry.box !== box) {
    const map = L.map(box, { attributionControl: false });
    L.tileLayer(state.config.tile_url, { maxZoom: 19 }).addTo(map);
    L.control.scale().addTo(map);
    entry = { box, map, line: L.polyline([], { color: '#3e8ef7' }).addTo(map), marker: null };
    state.maps.set(id, entry);
  }
  const points = track.map((p) => [p.lat, p.lon]);
  entry.line.setLatLngs(points);
  if (points.length) {
    if (entry.marker) entry.marker.setLatLng(points[points.length - 1]);
    else entry.marker = L.circleMarker(points[points.length - 1], { radius: 6, color: '#e5484d' }).addTo(entry.map);
    entry.map.fitBounds(entry.line.getBounds(), { maxZoom: 17 });
  } else { entry.map.setView([0, 0], 2); }
}
function loadLeaflet() {
  if (!state.config.leaflet || !state.config.tile_url || window.L) return;
  document.head.append(el('link', { rel: 'stylesheet', href: '/assets/leaflet/leaflet.css' }));
  const script = el('script', { src: '/assets/leaflet/leaflet.js' });
  script.addEventListener('load', renderBoard);
  document.head.append(script);
}

// ---- devices, history, accounts ----
function automatedSOSText(person) {
  const s = (person && person.automated_sos) || { active: true, provider: "the operator's dispatch centre" };
  return s.active ? 'AutomatedSOS on, provided by ' + s.provider
    : 'AutomatedSOS off: the rules raise alerts that reach no dispatcher, and the device calls nobody for them; the SOS button does';
}
function devicePower(hb) {
  if (!hb.device_power) return '—';
  const percent = hb.device_battery_pct !== undefined && hb.device_battery_pct !== null ? ' ' + hb.device_battery_pct + '%' : '';
  return { battery: 'on battery', charging: 'charging', full: 'charged', mains: 'mains' }[hb.device_power] + percent;
}
// Every item of a list the server pages (`limit`, `after`, `next`): the pages one after another
// until the last, which has no next.
async function apiAll(path, key) {
  const items = [];
  let after = null;
  do {
    const page = await api('GET', path + '?limit=1000' + (after ? '&after=' + encodeURIComponent(after) : ''));
    items.push(...page[key]);
    after = page.next || null;
  } while (after);
  return items;
}
async function refreshDevices() {
  try { state.devices = await apiAll('/v1/devices', 'devices'); } catch (e) { return; }
  const rows = state.devices.map((d) => {
    const hb = d.heartbeat || {};
    return el('tr', { class: d.silent ? 'silent' : '', dataset: { deviceId: d.device_id } },
      el('td', {}, d.device_id), el('td', { class: 'device-person' }, d.person ? d.person.name : ''),
      el('td', {}, el('span', { class: 'age', dataset: { at: d.last_seen_ms } }, ago(d.last_seen_ms))),
      el('td', {}, hb.strap || '—'), el('td', {}, hb.battery_pct !== undefined && hb.battery_pct !== null ? hb.battery_pct + '%' : '—'),
      el('td', { class: 'device-power' }, devicePower(hb)), el('td', {}, hb.gpsd || '—'),
      el('td', { class: 'device-state' }, d.silent ? el('span', { class: 'badge' }, 'SILENT') : null,
        protection(hb, d.last_seen_ms).map((p) => el('span', { class: 'badge protection' }, p)),
        automatedSOS(d.person) ? el('span', { class: 'badge protection automated-sos-off' }, automatedSOS(d.person)) : null,
        discreet(d.person) ? el('span', { class: 'badge protection discreet-sos' }, discreet(d.person)) : null,
        !d.silent && !protection(hb, d.last_seen_ms).length && !automatedSOS(d.person) && !discreet(d.person) ? 'ok' : null),
      el('td', {}, el('button', { type: 'button', class: 'care-show', onclick: () => showCare(d.device_id) }, 'Care')));
  });
  fill($('device-list'), el('table', {}, el('tr', {}, ['Device', 'Person', 'Last seen', 'Strap', 'Strap battery', 'Device power', 'GPS', 'State', ''].map(header)), rows));
}
// ---- care settings and erasure (Data4Help: the person's thresholds, rules, contacts) ----
const RULES = ['heart_rate_low', 'heart_rate_high', 'no_pulse', 'contact_lost', 'strap_silent', 'manual'];
async function showCare(deviceID) {
  let view;
  try { view = await api('GET', '/v1/devices/' + encodeURIComponent(deviceID) + '/care-settings'); } catch (e) { fill($('care'), e.message); $('care').hidden = false; return; }
  const s = view.settings || {};
  const admin = state.account && state.account.role === 'admin';
  const number = (id, value) => el('input', { id, type: 'number', min: 20, max: 250, value: value === undefined || value === null ? '' : String(value), disabled: !admin });
  const rules = RULES.map((r) => el('label', {}, el('input', { type: 'checkbox', class: 'care-rule', dataset: { rule: r },
    checked: !(s.rules && s.rules[r] === false), disabled: !admin || r === 'manual' }), ' ' + label(r)));
  const contacts = el('textarea', { id: 'care-contacts', disabled: !admin, placeholder: 'name; relation; phone (one a line)' });
  contacts.value = (s.contacts || []).map((c) => [c.name, c.relation || '', c.phone || ''].join('; ')).join('\n');
  const running = view.device_version === null || view.device_version === undefined ? 'the device has not reported a version yet' : 'the device runs version ' + view.device_version;
  const message = el('p', { id: 'care-message', role: 'status' });
  const save = async (event) => {
    event.preventDefault();
    const value = (id) => $(id).value === '' ? null : Number($(id).value);
    const body = { min_hr: value('care-min'), max_hr: value('care-max'), resting_hr: value('care-resting'), rules: {},
      contacts: contacts.value.split('\n').map((line) => line.split(';').map((x) => x.trim())).filter((p) => p[0])
        .map((p) => ({ name: p[0], relation: p[1] || null, phone: p[2] || null })),
      // Settings this form does not show are kept: a save here must not, say, make a discreet wearer's device light up.
      care_profile: s.care_profile ?? null, tell_contacts_at_raise: s.tell_contacts_at_raise ?? null, discreet_sos: s.discreet_sos ?? null };
    for (const box of document.querySelectorAll('.care-rule')) if (box.dataset.rule !== 'manual') body.rules[box.dataset.rule] = box.checked;
    try {
      const stored = await api('PUT', '/v1/devices/' + encodeURIComponent(deviceID) + '/care-settings', body);
      await showCare(deviceID);
      $('care-message').textContent = 'Saved version ' + stored.version + '; it reaches the device at its next sync.';
    } catch (e) { message.textContent = e.message; }
  };
  const erase = async () => {
    const typed = window.prompt('This erases everything the server holds of the person wearing ' + deviceID + ', and the device wipes itself at its next sync. Type the device id to confirm.');
    if (typed !== deviceID) { message.textContent = 'Not erased.'; return; }
    try {
      await api('POST', '/v1/devices/' + encodeURIComponent(deviceID) + '/erase');
      fill($('care'), el('p', { id: 'care-message', role: 'status' }, 'Erased ' + deviceID + '.'));
      refreshDevices();
    } catch (e) { message.textContent = e.message; }
  };
  fill($('care'),
    el('h2', {}, 'Care settings of ', el('span', { class: 'care-person' }, view.device_id)),
    el('p', { class: 'muted' }, s.version ? 'Version ' + s.version + ' by ' + view.updated_by + ' · ' : 'Not set: the device uses its own configuration · ',
      el('span', { id: 'care-running' }, running)),
    view.device_conflicts.length ? el('p', { class: 'conflict', id: 'care-conflicts' }, 'Overridden on the device: ' + view.device_conflicts.join(', ')) : null,
    el('form', { id: 'care-form', onsubmit: save },
      el('label', {}, 'Min bpm ', number('care-min', s.min_hr)), el('label', {}, 'Max bpm ', number('care-max', s.max_hr)),
      el('label', {}, 'Resting bpm ', number('care-resting', s.resting_hr)),
      el('div', {}, rules), el('label', { class: 'wide' }, 'Contacts', contacts),
      admin ? el('button', { type: 'submit', class: 'primary', id: 'care-save' }, 'Save') : null,
      admin ? el('button', { type: 'button', id: 'care-erase', onclick: erase }, 'Erase this person\'s data') : null),
    message);
  $('care').hidden = false;
}
async function refreshHistory() {
  try { state.history = (await api('GET', '/v1/alerts?status=closed&limit=50')).alerts; } catch (e) { return; }
  $('history').replaceChildren(...(state.history.length ? state.history.map(renderHistoryItem) : [el('p', { class: 'empty' }, 'No closed alerts yet.')]));
}
function renderHistoryItem(alert) {
  const body = el('div', { class: 'history-detail' });
  const show = el('button', { type: 'button', class: 'history-show', onclick: async () => {
    try {
      const d = await api('GET', '/v1/alerts/' + encodeURIComponent(alert.alert_id));
      fill(body,
        el('ol', { class: 'timeline' }, d.timeline.map(timelineItem)),
        el('ul', { class: 'plain notes' }, d.notes.map((n) => el('li', {}, n.author + ': ', el('span', { class: 'note-body' }, n.text)))));
    } catch (e) { body.textContent = String(e.message || e); }
  } }, 'Timeline');
  return el('div', { class: 'history-item', dataset: { alertId: alert.alert_id } },
    el('strong', { class: 'person-name' }, alert.person ? alert.person.name : alert.device_id), ' · ', el('span', { class: 'alert-kind' }, label(alert.kind)),
    ' · ', el('span', { class: 'outcome' }, alert.outcome ? label(alert.outcome) : alert.state),
    alert.resolved_by ? el('span', { class: 'muted' }, ' by ' + alert.resolved_by) : null,
    ' · ', clock(alert.resolved_ms || alert.updated_ms), ' ', show, body);
}
async function refreshAccounts() {
  let list;
  try { list = await apiAll('/v1/accounts', 'accounts'); } catch (e) { return; }
  fill($('account-list'), el('tr', {}, ['Username', 'Name', 'Role', 'State', ''].map(header)),
    list.map((a) => el('tr', { dataset: { accountId: a.id } }, el('td', {}, a.username), el('td', {}, a.display_name), el('td', {}, a.role),
      el('td', {}, a.disabled ? 'disabled' : 'active'),
      el('td', {}, a.id === state.account.id ? '' : el('button', { type: 'button', class: 'account-toggle', onclick: async () => {
        try { await api('POST', '/v1/accounts/' + encodeURIComponent(a.id) + (a.disabled ? '/enable' : '/disable')); } catch (e) { $('account-message').textContent = e.message; }
        refreshAccounts();
      } }, a.disabled ? 'Enable' : 'Disable')))));
}
async function createAccount(event) {
  event.preventDefault();
  try {
    await api('POST', '/v1/accounts', { username: $('new-username').value, display_name: $('new-display-name').value, password: $('new-password').value, role: 'dispatcher' });
    $('account-message').textContent = 'Created ' + $('new-username').value;
    $('account-form').reset();
  } catch (e) { $('account-message').textContent = e.message; }
  refreshAccounts();
}
function showTab(name) {
  for (const tab of document.querySelectorAll('.tab')) tab.setAttribute('aria-pressed', String(tab.dataset.tab === name));
  for (const panel of document.querySelectorAll('.panel')) panel.hidden = panel.id !== name;
  $('panel-title').textContent = { board: 'Open alerts', devices: 'Devices', history: 'Closed alerts', accounts: 'Accounts' }[name] || name;
  if (name === 'devices') refreshDevices();
  if (name === 'history') refreshHistory();
}

// ---- boot ----
document.addEventListener('DOMContentLoaded', async () => {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  $('account-form').addEventListener('submit', createAccount);
  for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => showTab(tab.dataset.tab));
  // Any click or key on the page lets the browser play sound; the button says so explicitly.
  for (const kind of ['click', 'keydown']) {
    document.addEventListener(kind, () => { if (state.started && state.audio && state.audio.state !== 'running') state.audio.resume().then(showSound, showSound); });
  }
  $('sound-enable').addEventListener('click', enableSound);
  setInterval(ringAlarm, ALARM_EVERY_MS);
  setInterval(watchFeed, 1000);
  setInterval(() => { for (const node of document.querySelectorAll('.age')) node.textContent = ago(Number(node.dataset.at) || null); }, 1000);
  setInterval(() => { if (state.started) refreshDevices(); }, 15000);
  const response = await fetch('/v1/session', { credentials: 'same-origin' });
  if (!response.ok) { showSignIn(''); return; }
  start(await response.json());
});
// For tests and operators: drop the live feed (it resumes after the last event seen).
window.trackmeConsole = {
  dropStream: () => stopStream(),
  resumeStream: () => openStream(),
  seenEventIds: () => state.seenEventIds.slice(),
  lastEventId: () => state.lastEventId,
};
})();
