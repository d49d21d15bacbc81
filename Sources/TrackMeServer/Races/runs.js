// The public list of runs: upcoming, live and finished, found by name or place. No account;
// every name and place goes on the page as text, never as markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const labels = { upcoming: 'Upcoming', live: 'Live now', finished: 'Finished' };
  function cell(value, cls) { const td = document.createElement('td'); td.textContent = value; if (cls) td.className = cls; return td; }
  function when(ms) { return new Date(ms).toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }); }

  // The list pages: a search shows its first page, and "More runs" adds the next one.
  const state = { params: null, next: null, shown: 0, query: '' };

  function search() {
    const params = new URLSearchParams();
    const q = $('run-search').value.trim();
    if (q) params.set('q', q);
    if ($('run-status').value) params.set('status', $('run-status').value);
    history.replaceState(null, '', params.toString() ? '?' + params : location.pathname);
    state.params = params;
    state.query = q;
    state.next = null;
    state.shown = 0;
    $('runs').tBodies[0].replaceChildren();
    return more();
  }

  async function more() {
    const params = new URLSearchParams(state.params);
    if (state.next) params.set('after', state.next);
    const asked = state.params;
    try {
      const response = await fetch('/v1/public/runs' + (params.toString() ? '?' + params : ''), { cache: 'no-store' });
      const data = await response.json();
      // A newer search started meanwhile: its list, not this one.
      if (asked !== state.params) return;
      if (!response.ok) { $('count').textContent = data.error ? data.error.message : 'The list is unavailable'; return; }
      $('runs').tBodies[0].append(...data.runs.map((run) => {
        const row = document.createElement('tr');
        row.dataset.run = run.id;
        row.className = 'run-' + run.status;
        const name = document.createElement('td');
        const link = document.createElement('a');
        link.href = run.spectator_url;
        link.textContent = run.name;
        name.append(link);
        row.append(name, cell(run.place || '—'), cell(when(run.start_ms)), cell((run.distance_m / 1000).toFixed(2), 'km'), cell(labels[run.status] || run.status, 'run-status'));
        return row;
      }));
      state.shown += data.runs.length;
      state.next = data.next || null;
      $('more-runs').hidden = !state.next;
      $('count').textContent = state.shown + ' run' + (state.shown === 1 ? '' : 's') + (state.query ? ' matching “' + state.query + '”' : '') + (state.next ? ', more below' : '');
    } catch (e) { $('count').textContent = 'The list is unavailable; try again'; }
  }

  const start = new URLSearchParams(location.search);
  $('run-search').value = start.get('q') || '';
  $('run-status').value = start.get('status') || '';
  $('find-form').addEventListener('submit', (event) => { event.preventDefault(); search(); });
  $('run-status').addEventListener('change', search);
  $('more-runs').addEventListener('click', more);
  search();
})();
