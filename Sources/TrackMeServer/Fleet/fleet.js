// The fleet page: taxis by zone and state, each zone's queue in arrival order, silent taxis
// marked. Signed-in fleet operators (the console's sign-in); refreshed every 2 s. Every name goes
// on the page as text, never as markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  function text(tag, value, cls) { const n = document.createElement(tag); n.textContent = value; if (cls) n.className = cls; return n; }
  function taxiItem(t) {
    const li = text('li', t.name + ' (' + t.state.replace('_', ' ') + (t.silent ? ', silent' : '') + ')', t.silent ? 'taxi silent' : 'taxi ' + t.state);
    li.dataset.device = t.device_id;
    li.dataset.state = t.silent ? 'silent' : t.state;
    return li;
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
  }
  load();
  setInterval(load, 2000);
})();
