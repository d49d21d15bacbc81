// The fleet page: rides (offered, accepted, on ride, completed, missing client) with the taxi
// and every offer's outcome, then taxis by zone and state, each zone's queue in arrival order,
// silent taxis marked. Signed-in fleet operators (the console's sign-in); refreshed every 2 s.
// Every name goes on the page as text, never as markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  function text(tag, value, cls) { const n = document.createElement(tag); n.textContent = value; if (cls) n.className = cls; return n; }
  // How long ago a report came, in words; kept current between refreshes by `tick`.
  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 90) return s + ' s ago';
    if (s < 5400) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }
  function taxiItem(t) {
    const li = text('li', t.name + ' (' + t.state.replace('_', ' ') + (t.silent ? ', silent' : '') + ')', t.silent ? 'taxi silent' : 'taxi ' + t.state);
    li.dataset.device = t.device_id;
    li.dataset.state = t.silent ? 'silent' : t.state;
    const age = text('span', ' · last report ' + ago(t.last_report_ms), 'last-report');
    age.dataset.at = t.last_report_ms;
    li.append(age);
    if (t.fix_ms) {
      const fix = text('span', ' · position ' + ago(t.fix_ms), 'last-report');
      fix.dataset.at = t.fix_ms;
      fix.dataset.label = 'position';
      li.append(fix);
    }
    return li;
  }
  function tick() {
    for (const age of document.querySelectorAll('.last-report')) age.textContent = ' · ' + (age.dataset.label || 'last report') + ' ' + ago(Number(age.dataset.at));
  }
  async function load() {
    let response;
    try { response = await fetch('/v1/fleet', { credentials: 'same-origin', cache: 'no-store' }); } catch (e) { $('fleet-status').textContent = 'reconnecting'; return; }
    if (response.status === 401 || response.status === 403) { $('signin-needed').hidden = false; $('fleet-status').textContent = 'signed out'; return; }
    if (!response.ok) { $('fleet-status').textContent = 'unavailable'; return; }
    const board = await response.json();
    $('signin-needed').hidden = true;
    $('fleet-status').textContent = 'live';
    $('zones').replaceChildren(...board.zones.map((z) => {
      const section = document.createElement('section');
      section.className = 'zone';
      section.dataset.zone = z.id;
      section.append(text('h2', z.name));
      const queue = document.createElement('ol'); queue.className = 'queue';
      queue.append(...z.queue.map(taxiItem));
      section.append(text('h3', 'Queue (' + z.queue.length + ')'), queue);
      const others = document.createElement('ul'); others.className = 'others';
      others.append(...z.taxis.filter((t) => !z.queue.some((q) => q.device_id === t.device_id)).map(taxiItem));
      section.append(text('h3', 'Other taxis'), others);
      return section;
    }));
    $('outside').replaceChildren(...board.outside.map(taxiItem));
    drawMap(board);
    await loadRides(board);
  }
  const STATES = { waiting: 'waiting', offered: 'offered', accepted: 'accepted', on_ride: 'on ride', completed: 'completed', missing_client: 'missing client' };
  function clock(ms) { return ms ? new Date(ms).toLocaleTimeString() : ''; }
  // Rides newest first: what each offer came to (accepted, refused, silent: refused by silence).
  // The list pages: the page follows `next` up to RIDE_PAGES pages, the newest rides.
  const RIDE_PAGES = 5;
  async function loadRides(board) {
    const rides = [];
    let after = null, more = false;
    for (let page = 0; page < RIDE_PAGES; page++) {
      let response;
      const query = '?limit=200' + (after ? '&after=' + encodeURIComponent(after) : '');
      try { response = await fetch('/v1/fleet/rides' + query, { credentials: 'same-origin', cache: 'no-store' }); } catch (e) { return; }
      if (!response.ok) return;
      const data = await response.json();
      rides.push(...data.rides);
      after = data.next || null;
      more = !!after;
      if (!after) break;
    }
    const zones = new Map(board.zones.map((z) => [z.id, z.name]));
    const taxis = new Map(board.zones.flatMap((z) => z.taxis).concat(board.outside).map((t) => [t.device_id, t.name]));
    const counts = {};
    $('rides').tBodies[0].replaceChildren(...rides.map((r) => {
      counts[r.state] = (counts[r.state] || 0) + 1;
      const tr = document.createElement('tr');
      tr.className = 'ride ' + r.state;
      tr.dataset.ride = r.id;
      tr.dataset.state = r.state;
      const live = r.offers.length ? r.offers[r.offers.length - 1] : null;
      const taxi = r.device_id || (r.state === 'offered' && live ? live.device_id : '');
      const offers = r.offers.map((o) => (taxis.get(o.device_id) || o.device_id) + ': ' + (o.outcome || 'waiting')).join(', ');
      tr.append(text('td', STATES[r.state] || r.state), text('td', zones.get(r.zone_id) || r.zone_id), text('td', r.pickup || ''),
        text('td', taxi ? (taxis.get(taxi) || taxi) : ''), text('td', offers), text('td', clock(r.created_ms)), text('td', clock(r.reserved_ms)));
      return tr;
    }));
    $('ride-counts').textContent = (Object.keys(STATES).filter((s) => counts[s]).map((s) => counts[s] + ' ' + STATES[s]).join(' · ') || 'no rides') +
      (more ? ' (the newest ' + rides.length + ')' : '');
  }
  // The zones and taxis on a plain grid (equirectangular around their middle) with a scale bar
  // and north up: queued taxis green, others amber, silent ones hollow.
  const NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) { const n = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v)); return n; }
  function drawMap(board) {
    const box = $('fleet-map');
    const taxis = board.zones.flatMap((z) => z.taxis).concat(board.outside).filter((t) => typeof t.lat === 'number' && typeof t.lon === 'number');
    const points = board.zones.flatMap((z) => z.polygon).concat(taxis.map((t) => [t.lat, t.lon]));
    const W = Math.max(280, Math.floor(box.clientWidth || 600)), H = Math.round(Math.min(420, Math.max(220, W * 0.5)));
    const plot = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, class: 'grid-map', role: 'img',
      'aria-label': board.zones.length + ' zones and ' + taxis.length + ' taxis with a known position' });
    if (!points.length) { box.replaceChildren(plot); return; }
    const lat0 = points.reduce((s, p) => s + p[0], 0) / points.length;
    const kx = Math.cos(lat0 * Math.PI / 180) * 111320, ky = 110540;
    const xs = points.map((p) => p[1] * kx), ys = points.map((p) => p[0] * ky);
    const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
    const span = Math.max(200, maxX - minX, (maxY - minY) * W / H) * 1.15;
    const scale = W / span, cx = (minX + maxX) / 2, cy = (minY + maxY) / 2;
    const px = (lon) => W / 2 + (lon * kx - cx) * scale, py = (lat) => H / 2 - (lat * ky - cy) * scale;
    for (const z of board.zones) {
      plot.append(svg('polygon', { points: z.polygon.map((p) => px(p[1]).toFixed(1) + ',' + py(p[0]).toFixed(1)).join(' '), class: 'zone-shape' }));
    }
    const queued = new Set(board.zones.flatMap((z) => z.queue.map((t) => t.device_id)));
    for (const t of taxis) {
      const dot = svg('circle', { cx: px(t.lon).toFixed(1), cy: py(t.lat).toFixed(1), r: 6, class: 'taxi-dot ' + (t.silent ? 'silent' : queued.has(t.device_id) ? 'queued' : 'busy') });
      dot.dataset.device = t.device_id;
      const title = svg('title'); title.textContent = t.name + ' (' + t.state.replace('_', ' ') + '), last report ' + ago(t.last_report_ms) + (t.fix_ms ? ', position ' + ago(t.fix_ms) : ''); dot.append(title);
      plot.append(dot);
    }
    const steps = [50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000];
    const bar = steps.find((s) => s * scale >= W / 8) || steps[steps.length - 1];
    plot.append(svg('line', { x1: 12, y1: H - 14, x2: 12 + bar * scale, y2: H - 14, class: 'scale-bar' }));
    const label = svg('text', { x: 12, y: H - 20, class: 'map-label' }); label.textContent = bar >= 1000 ? bar / 1000 + ' km' : bar + ' m'; plot.append(label);
    const north = svg('text', { x: W - 16, y: 22, 'text-anchor': 'middle', class: 'map-label' }); north.textContent = 'N ↑'; plot.append(north);
    box.replaceChildren(plot);
  }

  load();
  setInterval(load, 2000);
  setInterval(tick, 1000);
})();
