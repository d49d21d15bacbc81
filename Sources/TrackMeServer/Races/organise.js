// The organiser's page: sign in, create a run from a GPX file or drawn points, open enrolment,
// see enrolments and check-ins, take off runners who did not check in, follow the run (heart
// rate only for runners who consented at enrolment; the server decides) and close it with the
// final standings. Every name goes on the page as text, never as markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  // `after` is the cursor of the page of runners shown (null: the leaders), `before` the
  // cursors of the pages before it, so that a refresh reads only the page on screen.
  const state = { csrf: null, run: null, timer: null, after: null, before: [], next: null };

  async function api(method, path, body) {
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (method !== 'GET' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
    const response = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const error = new Error(data && data.error ? data.error.message + (data.error.field ? ' (' + data.error.field + ')' : '') : response.statusText);
      error.status = response.status;
      throw error;
    }
    return data;
  }
  // A list that pages: every page, following `next` until there is none.
  async function allPages(path, key) {
    const items = [];
    let after = null;
    do {
      const data = await api('GET', path + (after ? (path.includes('?') ? '&' : '?') + 'after=' + encodeURIComponent(after) : ''));
      items.push(...data[key]);
      after = data.next || null;
    } while (after);
    return items;
  }
  function cell(value, cls) { const td = document.createElement('td'); td.textContent = value; if (cls) td.className = cls; return td; }
  function when(ms) { return ms == null ? '' : new Date(ms).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }); }
  function clock(s) {
    if (typeof s !== 'number') return '';
    const t = Math.round(s), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, sec = t % 60;
    return (h ? h + ':' + String(m).padStart(2, '0') : String(m)) + ':' + String(sec).padStart(2, '0');
  }

  function enter(session) {
    state.csrf = session.csrf_token;
    $('whoami').textContent = session.account.display_name + ' (' + session.account.role + ')';
    $('signin').hidden = true;
    $('desk').hidden = false;
    $('sign-out').hidden = false;
    loadRuns();
  }

  async function loadRuns() {
    const runs = await allPages('/v1/runs', 'runs');
    $('my-runs').tBodies[0].replaceChildren(...runs.map((run) => {
      const row = document.createElement('tr');
      const name = document.createElement('td');
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'link-button';
      open.textContent = run.name;
      open.addEventListener('click', () => show(run.id));
      name.append(open);
      row.append(name, cell(run.code), cell(run.place || ''), cell(when(run.start_ms)), cell(run.status));
      return row;
    }));
  }

  // "lat, lon" per line; a line that is not two numbers is named rather than skipped.
  function drawnPoints(text) {
    const points = [];
    text.split('\n').map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
      const parts = line.split(/[,;\s]+/).filter(Boolean).map(Number);
      if (parts.length !== 2 || parts.some((n) => !Number.isFinite(n))) throw new Error('point line ' + (i + 1) + ' is not “latitude, longitude”');
      points.push(parts);
    });
    return points;
  }

  async function create(event) {
    event.preventDefault();
    $('create-message').textContent = '';
    try {
      const start = new Date($('run-start').value).getTime();
      if (!Number.isFinite(start)) throw new Error('give the start time');
      const body = { name: $('run-name').value, place: $('run-place').value, start_ms: start, end_ms: start + Math.round(Number($('run-hours').value || 6) * 3600000) };
      if ($('run-cap').value) body.cap = Number($('run-cap').value);
      if ($('run-code').value) body.code = $('run-code').value;
      const file = $('run-gpx').files[0];
      if (file) body.gpx = await file.text();
      else body.points = drawnPoints($('run-points').value);
      const run = await api('POST', '/v1/runs', body);
      $('create-message').textContent = 'Created “' + run.name + '” with code ' + run.code;
      await loadRuns();
      show(run.id);
    } catch (e) { $('create-message').textContent = 'Not created: ' + e.message; }
  }

  async function show(id) {
    clearInterval(state.timer);
    state.run = id;
    state.after = null;
    state.before = [];
    $('run').hidden = false;
    await refresh();
    state.timer = setInterval(refresh, 5000);
  }

  async function refresh() {
    if (!state.run) return;
    let run;
    const page = state.after ? '?after=' + encodeURIComponent(state.after) : '';
    try { run = await api('GET', '/v1/runs/' + encodeURIComponent(state.run) + page); } catch (e) { $('run-message').textContent = e.message; return; }
    $('run-title').textContent = run.name;
    state.next = run.next || null;
    $('entries-next').hidden = !state.next;
    $('entries-previous').hidden = !state.after;
    const entered = run.runners;
    $('run-facts').textContent = (run.place ? run.place + ' · ' : '') + 'code ' + run.code + ' · starts ' + when(run.start_ms) + ' · ' + (run.distance_m / 1000).toFixed(2) + ' km · ' +
      entered + (run.cap ? ' of ' + run.cap : '') + ' runner' + (entered === 1 ? '' : 's') + ' · ' + run.status + (run.closed_ms ? ' (closed ' + when(run.closed_ms) + ')' : '');
    $('enrolment-button').textContent = run.enrolment_open ? 'Close enrolment' : 'Open enrolment';
    $('enrolment-button').dataset.open = run.enrolment_open ? '1' : '';
    $('enrolment-button').disabled = !!run.closed_ms;
    $('close-button').disabled = !!run.closed_ms;
    $('results-link').href = '/v1/runs/' + encodeURIComponent(run.id) + '/results.csv';
    $('spectator-link').href = run.spectator_url;
    $('entries').tBodies[0].replaceChildren(...run.entries.map((r) => {
      const row = document.createElement('tr');
      row.dataset.device = r.device_id;
      const health = r.health ? r.health.heart_rate_bpm + ' bpm' : r.shares_health ? 'no reading' : 'not shared';
      const action = document.createElement('td');
      if (r.checked_in_ms == null && !run.closed_ms) {
        const remove = document.createElement('button');
        remove.type = 'button';
        remove.textContent = 'Remove';
        remove.setAttribute('aria-label', 'Remove ' + r.name);
        remove.addEventListener('click', () => removeRunner(r));
        action.append(remove);
      }
      row.append(cell(String(r.rank), 'rank'), cell(r.name, 'name'), cell(r.checked_in_ms == null ? 'no' : when(r.checked_in_ms), 'checked-in'),
        cell(r.distance_m == null ? '' : (r.distance_m / 1000).toFixed(2), 'km'), cell(clock(r.elapsed_s), 'time'),
        cell(r.pace_s_per_km == null ? '' : clock(r.pace_s_per_km), 'pace'), cell(health, 'health'), cell(r.stale ? 'stale' : when(r.fix_ms), 'seen'), action);
      return row;
    }));
    if (run.closed_ms) { clearInterval(state.timer); $('run-message').textContent = 'Closed: final standings'; }
  }

  function turn(forward) {
    if (forward) {
      if (!state.next) return;
      state.before.push(state.after);
      state.after = state.next;
    } else {
      state.after = state.before.length ? state.before.pop() : null;
    }
    refresh();
  }

  async function removeRunner(r) {
    try {
      await api('POST', '/v1/runs/' + encodeURIComponent(state.run) + '/removals', { device_id: r.device_id });
      $('run-message').textContent = r.name + ' removed';
      refresh();
    } catch (e) { $('run-message').textContent = 'Not removed: ' + e.message; }
  }

  $('signin-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    try { enter(await api('POST', '/v1/session', { username: $('username').value, password: $('password').value })); }
    catch (e) { $('signin-message').textContent = e.message; }
  });
  $('sign-out').addEventListener('click', async () => {
    try { await api('DELETE', '/v1/session'); } catch (e) { /* signed out anyway */ }
    location.reload();
  });
  $('create-form').addEventListener('submit', create);
  $('entries-next').addEventListener('click', () => turn(true));
  $('entries-previous').addEventListener('click', () => turn(false));
  $('enrolment-button').addEventListener('click', async () => {
    try { await api('POST', '/v1/runs/' + encodeURIComponent(state.run) + '/enrolment', { open: !$('enrolment-button').dataset.open }); refresh(); }
    catch (e) { $('run-message').textContent = e.message; }
  });
  $('close-button').addEventListener('click', async () => {
    try { await api('POST', '/v1/runs/' + encodeURIComponent(state.run) + '/close'); refresh(); }
    catch (e) { $('run-message').textContent = 'Not closed: ' + e.message; }
  });
  (async () => {
    try { enter(await api('GET', '/v1/session')); } catch (e) { $('signin').hidden = false; }
  })();
})();
