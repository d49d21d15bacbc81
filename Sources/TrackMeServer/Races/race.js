// The public spectator page of a run: no account, no cookie needed. It follows the run's live
// feed, /v1/public/runs/ID/stream (consenting runners, no device ids), and puts every name on
// the page as text, never as markup. Once the run is finished the feed's last message has the
// standings without positions, and the page stops following.
'use strict';
(() => {
  const runID = decodeURIComponent(location.pathname.split('/').filter(Boolean)[1] || '');
  const $ = (id) => document.getElementById(id);
  const state = { config: { tile_url: null, leaflet: false }, data: null, map: null, rows: new Map(), query: '', readAt: Date.now(), leader: undefined };
  const NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) { const n = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v)); return n; }
  function text(tag, value, cls) { const n = document.createElement(tag); n.textContent = value; if (cls) n.className = cls; return n; }
  function km(m) { return (m / 1000).toFixed(2); }
  function clock(s) {
    const t = Math.round(s), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, sec = t % 60;
    return (h ? h + ':' + String(m).padStart(2, '0') : String(m)) + ':' + String(sec).padStart(2, '0');
  }
  function finished(r) { return typeof r.finish_elapsed_s === 'number'; }
  // What the time column says: the finish time, else how old a stale runner's fix is.
  function status(r) {
    if (finished(r)) return clock(r.finish_elapsed_s);
    if (r.stale) return 'no fix for ' + clock(r.fix_age_s);
    return '';
  }

  const statusText = { upcoming: 'not started yet', live: 'live', finished: 'finished: final standings' };
  function receive(data) {
    state.data = data;
    state.readAt = Date.now();
    render();
    $('run-status').textContent = statusText[data.status] || data.status;
  }

  // The live feed; EventSource reconnects by itself after a drop. A run that does not exist
  // answers 404, which EventSource gives up on: the page then says so.
  function follow() {
    const feed = new EventSource('/v1/public/runs/' + encodeURIComponent(runID) + '/stream');
    state.feed = feed;
    feed.addEventListener('standings', (event) => receive(JSON.parse(event.data)));
    feed.addEventListener('finished', (event) => { feed.close(); receive(JSON.parse(event.data)); });
    feed.addEventListener('error', async () => {
      if (state.data && state.data.status === 'finished') return;
      if (feed.readyState !== EventSource.CLOSED) { $('run-status').textContent = 'reconnecting'; return; }
      try {
        const response = await fetch('/v1/public/runs/' + encodeURIComponent(runID), { cache: 'no-store' });
        if (response.status === 404) { $('run-status').textContent = 'no such run'; return; }
      } catch (e) { /* offline: try again below */ }
      $('run-status').textContent = 'reconnecting';
      setTimeout(follow, 3000);
    });
  }

  // How long ago the runner's shown fix was taken, counted on from the last read.
  function seen(r) {
    if (typeof r.fix_age_s !== 'number') return 'no fix yet';
    const s = Math.max(0, Math.round(r.fix_age_s + (Date.now() - state.readAt) / 1000));
    return s < 90 ? s + ' s ago' : s < 5400 ? Math.round(s / 60) + ' min ago' : Math.round(s / 3600) + ' h ago';
  }
  const matches = (r) => !state.query || r.name.toLowerCase().includes(state.query);

  function render() {
    const d = state.data;
    document.title = d.name + ' (live)';
    $('run-name').textContent = d.name;
    const leader = d.runners.find((r) => r.id === d.leader);
    const race = typeof d.distance_m === 'number' ? d.distance_m : d.length_m;
    $('leader').textContent = !leader ? 'No runner on the course yet'
      : finished(leader) ? 'Leader: ' + leader.name + ', finished in ' + clock(leader.finish_elapsed_s)
      : 'Leader: ' + leader.name + ' at ' + km(leader.distance_m) + ' km of ' + km(race);
    // Screen readers hear a change of leader, not every second's distances.
    if (leader && state.leader !== undefined && state.leader !== leader.id) $('leader-news').textContent = leader.name + ' takes the lead';
    state.leader = leader ? leader.id : null;
    renderRows(d);
    if (state.config.leaflet && state.config.tile_url && window.L) drawLeaflet(d); else drawGrid(d);
  }

  // The rows are kept and changed in place (a selection or the browser's Find stays put); a row
  // moves only when the order changes and goes only when its runner leaves the page.
  function renderRows(d) {
    const body = $('standings').tBodies[0];
    const keep = new Set();
    let shown = 0;
    d.runners.forEach((r, i) => {
      keep.add(r.id);
      let row = state.rows.get(r.id);
      if (!row) {
        row = document.createElement('tr');
        row.dataset.runner = r.id;
        row.append(text('td', '', 'rank'), text('td', '', 'name'), text('td', '', 'km'), text('td', '', 'time'), text('td', '', 'seen'));
        state.rows.set(r.id, row);
      }
      const values = [String(r.rank || i + 1), r.name, km(r.distance_m), status(r), seen(r)];
      values.forEach((value, k) => { if (row.cells[k].textContent !== value) row.cells[k].textContent = value; });
      row.classList.toggle('finished', finished(r));
      row.classList.toggle('stale', !finished(r) && !!r.stale);
      row.hidden = !matches(r);
      if (!row.hidden) shown += 1;
      if (body.rows[i] !== row) body.insertBefore(row, body.rows[i] || null);
    });
    for (const [id, row] of state.rows) if (!keep.has(id)) { row.remove(); state.rows.delete(id); }
    $('search-count').textContent = state.query ? shown + ' of ' + d.runners.length + ' runners match' : '';
    $('message').textContent = d.runners.length + ' runner' + (d.runners.length === 1 ? '' : 's') + ' shown';
  }

  function tick() {
    if (!state.data || state.data.status === 'finished') return;
    for (const r of state.data.runners) {
      const row = state.rows.get(r.id);
      if (row && row.cells[4].textContent !== seen(r)) row.cells[4].textContent = seen(r);
    }
  }

  // Without tiles: the course on a plain grid (equirectangular around its middle).
  function drawGrid(d) {
    const W = 600, H = 400, box = $('map');
    const placed = d.runners.filter((r) => typeof r.lat === 'number' && typeof r.lon === 'number');
    const plot = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: '100%', height: '100%', class: 'grid-map', role: 'img',
      'aria-label': 'The course with ' + placed.length + ' runners' + (placed.length ? '; the leader in orange' : '') });
    const all = d.path.concat(placed.map((r) => [r.lat, r.lon]));
    const lat0 = all.reduce((s, p) => s + p[0], 0) / all.length;
    const k = Math.cos(lat0 * Math.PI / 180) * 111320;
    const xs = all.map((p) => p[1] * k), ys = all.map((p) => p[0] * 110540);
    const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
    const span = Math.max(50, maxX - minX, (maxY - minY) * W / H) * 1.15;
    const cx = (minX + maxX) / 2, cy = (minY + maxY) / 2, scale = W / span;
    const px = (lon) => W / 2 + (lon * k - cx) * scale, py = (lat) => H / 2 - (lat * 110540 - cy) * scale;
    plot.append(svg('polyline', { points: d.path.map((p) => px(p[1]).toFixed(1) + ',' + py(p[0]).toFixed(1)).join(' '), fill: 'none', stroke: '#3e8ef7', 'stroke-width': 3 }));
    for (const r of placed.slice().reverse()) {
      const colour = r.id === d.leader ? '#f5a623' : '#e5484d';
      const found = state.query && matches(r);
      const dot = svg('circle', { cx: px(r.lon).toFixed(1), cy: py(r.lat).toFixed(1), r: found ? 9 : r.id === d.leader ? 7 : 4, fill: r.stale && !finished(r) ? 'none' : colour, stroke: found ? '#ffffff' : colour, 'stroke-width': found ? 3 : 1, class: 'runner' + (r.stale && !finished(r) ? ' stale' : '') + (found ? ' found' : '') });
      dot.dataset.runner = r.id;
      const title = svg('title'); title.textContent = r.name + (status(r) ? ' (' + status(r) + ')' : ''); dot.append(title);
      plot.append(dot);
    }
    box.replaceChildren(plot);
  }

  function drawLeaflet(d) {
    const L = window.L;
    if (!state.map) {
      const map = L.map($('map'), { attributionControl: false });
      L.tileLayer(state.config.tile_url, { maxZoom: 19 }).addTo(map);
      L.control.scale().addTo(map);
      const course = L.polyline(d.path, { color: '#3e8ef7' }).addTo(map);
      map.fitBounds(course.getBounds());
      state.map = { map, markers: new Map() };
    }
    const seen = new Set();
    for (const r of d.runners) {
      if (typeof r.lat !== 'number' || typeof r.lon !== 'number') continue;
      seen.add(r.id);
      let m = state.map.markers.get(r.id);
      if (!m) { m = L.circleMarker([r.lat, r.lon], { radius: 5, color: '#e5484d' }).addTo(state.map.map); m.bindTooltip(''); state.map.markers.set(r.id, m); }
      m.setLatLng([r.lat, r.lon]);
      m.setStyle({ fill: !(r.stale && !finished(r)) });
      m.setTooltipContent(document.createTextNode(r.name + (status(r) ? ' (' + status(r) + ')' : '')));
    }
    for (const [id, m] of state.map.markers) if (!seen.has(id)) { m.remove(); state.map.markers.delete(id); }
  }

  async function start() {
    try { state.config = await (await fetch('/v1/console/config')).json(); } catch (e) { /* grid */ }
    if (state.config.leaflet && state.config.tile_url && !window.L) {
      const css = document.createElement('link'); css.rel = 'stylesheet'; css.href = '/assets/leaflet/leaflet.css'; document.head.append(css);
      const js = document.createElement('script'); js.src = '/assets/leaflet/leaflet.js'; js.addEventListener('load', () => { if (state.data) render(); }); document.head.append(js);
    }
    $('search-form').addEventListener('submit', (event) => event.preventDefault());
    $('runner-search').addEventListener('input', () => {
      state.query = $('runner-search').value.trim().toLowerCase();
      if (state.data) render();
    });
    follow();
    setInterval(tick, 1000);
  }
  start();
})();
