"use strict";
(function () {
  const state = { csrf: null, account: null };
  const $ = (id) => document.getElementById(id);

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  // Times in the reader's own time zone; days of the daily statistics are UTC days.
  function when(ms) {
    return ms === null || ms === undefined ? "" : new Date(ms).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  function day(ms) { return new Date(ms).toLocaleDateString(undefined, { timeZone: "UTC", year: "numeric", month: "short", day: "numeric", weekday: "short" }); }

  async function api(method, path, body) {
    const headers = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && state.csrf) headers["X-CSRF-Token"] = state.csrf;
    const response = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const message = data && data.error ? data.error.message : response.statusText;
      const error = new Error(message);
      error.status = response.status;
      error.code = data && data.error ? data.error.code : null;
      throw error;
    }
    return data;
  }

  function table(node, headers, rows) {
    node.replaceChildren();
    const head = el("tr");
    for (const h of headers) {
      const th = el("th", h);
      if (!h) th.appendChild(el("span", "Actions", "visually-hidden"));
      head.appendChild(th);
    }
    node.appendChild(head);
    for (const cells of rows) {
      const tr = el("tr");
      for (const cell of cells) {
        const td = el("td");
        if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === null || cell === undefined ? "" : String(cell);
        tr.appendChild(td);
      }
      node.appendChild(tr);
    }
  }

  function toLocalInput(ms) {
    const d = new Date(ms - new Date().getTimezoneOffset() * 60000);
    return d.toISOString().slice(0, 19);
  }
  function fromLocalInput(value) { return new Date(value).getTime(); }

  // Sign-in, as on the console.
  async function start() {
    try {
      const session = await api("GET", "/v1/session");
      enter(session);
    } catch (e) {
      $("signin").hidden = false;
    }
  }

  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("signin-message").textContent = "";
    try {
      const session = await api("POST", "/v1/session", { username: $("username").value, password: $("password").value });
      enter(session);
    } catch (e) {
      $("signin-message").textContent = e.message;
    }
  });

  $("show-register").addEventListener("click", (event) => { event.preventDefault(); $("register-form").hidden = false; });
  $("register-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("POST", "/v1/organisations", { username: $("reg-username").value, display_name: $("reg-name").value, password: $("reg-password").value, role: "third_party" });
      $("register-message").textContent = "Registered; sign in above.";
    } catch (e) {
      $("register-message").textContent = e.message;
    }
  });

  $("signout").addEventListener("click", async () => {
    try { await api("DELETE", "/v1/session"); } catch (e) { /* signed out anyway */ }
    location.reload();
  });

  const tabsByRole = {
    wearer: [["wearer-data", "My data"], ["wearer-care", "Care"], ["wearer-requests", "Access"]],
    carer: [["carer-people", "People I care for"]],
    third_party: [["org-requests", "People"], ["org-groups", "Group figures"]],
  };

  function enter(session) {
    state.csrf = session.csrf_token;
    state.account = session.account;
    $("signin").hidden = true;
    $("app").hidden = false;
    $("whoami").textContent = session.account.display_name + " (" + session.account.role + ")";
    const tabs = tabsByRole[session.account.role] || [];
    const nav = $("tabs");
    nav.replaceChildren();
    for (const [panel, label] of tabs) {
      const button = el("button", label, "tab");
      button.dataset.tab = panel;
      button.addEventListener("click", () => show(panel));
      nav.appendChild(button);
    }
    if (tabs.length === 0) {
      nav.appendChild(el("span", "This page is for wearers and organisations; the console is at /.", "muted"));
      return;
    }
    show(tabs[0][0]);
  }

  function show(panel) {
    for (const section of document.querySelectorAll("main > .panel")) section.hidden = section.id !== panel;
    for (const button of document.querySelectorAll("#tabs .tab")) button.setAttribute("aria-pressed", button.dataset.tab === panel ? "true" : "false");
    if (panel === "wearer-data") loadWearerData();
    if (panel === "wearer-requests") loadWearerRequests();
    if (panel === "wearer-care") loadWearerCare();
    if (panel === "carer-people") loadCaredFor();
    if (panel === "org-requests") loadOrgRequests();
  }

  // The wearer's own data.
  function spanQuery() {
    if (!$("span-to").value) {
      const now = Date.now();
      $("span-to").value = toLocalInput(now + 60000);
      $("span-from").value = toLocalInput(now - 24 * 3600 * 1000);
    }
    return "from=" + fromLocalInput($("span-from").value) + "&to=" + fromLocalInput($("span-to").value);
  }

  $("span-form").addEventListener("submit", (event) => { event.preventDefault(); loadWearerData(); });

  // Plain words for what the server names with codes.
  const KINDS = {
    heart_rate_low: "Heart rate too low", heart_rate_high: "Heart rate too high", no_pulse: "No pulse", lethal_rhythm: "Dangerous heart rhythm",
    contact_lost: "Strap lost skin contact", strap_silent: "Strap stopped sending", manual: "SOS button pressed",
  };
  const OUTCOMES = { help_arrived: "Help arrived", false_alarm: "False alarm", wearer_safe: "Wearer was safe", unreachable: "Could not be reached" };
  const STATES = {
    pending: "Counting down on the device", raised: "Sent", delivered: "With the dispatchers", acknowledged: "Seen by a dispatcher",
    resolved: "Closed", cancelled: "Cancelled on the device",
  };
  const KIND_WORDS = { heart_rate: "heart rate", position: "positions", alerts: "alerts" };
  const words = (table, code) => (code ? table[code] || code.replace(/_/g, " ") : "");
  const kindList = (kinds) => kinds.map((k) => words(KIND_WORDS, k)).join(", ");
  const ROLES = { third_party: "organisation", fleet_operator: "fleet operator", organiser: "race organiser", emergency_contact: "emergency contact" };
  const REASONS = {
    consent: "you approved it", carer: "your carer", open_alert: "an open alert", recently_closed_alert: "an alert closed in the last day",
    administrator: "administration", own_device: "the device itself", joined_run: "a run you joined",
    alert_link: "the link of an alert sent to them",
  };
  // "heart_rate 2026-... to 2026-..." as "heart rate from <local time> to <local time>".
  function whatText(what) {
    const span = /^(\S+) (\d{4}-\d\d-\d\dT[^ ]+) to (\d{4}-\d\d-\d\dT[^ ]+)$/.exec(what);
    if (!span) return what.replace(/_/g, " ");
    return span[1].replace(/_/g, " ") + " from " + when(Date.parse(span[2])) + " to " + when(Date.parse(span[3]));
  }
  // The period a grant covers: from when (approval or the data start asked for) until it ends.
  function grantWindow(r) {
    const from = r.granted_from_ms !== null && r.granted_from_ms !== undefined ? r.granted_from_ms : r.data_from_ms;
    if (r.status === "pending") return (r.data_from_ms ? "data from " + when(r.data_from_ms) + ", " : "from approval, ") + r.days + " days";
    if (from === null || from === undefined) return "";
    return when(from) + " to " + when(r.ended_ms || r.expires_ms);
  }
  // A rule's alert raised while AutomatedSOS was off reached no dispatcher and no contact.
  function outcomeText(a) {
    if (a.dispatched === false) return "Not sent to a dispatcher (AutomatedSOS was off)" + (a.open ? "; still open on the device" : "");
    return a.outcome ? words(OUTCOMES, a.outcome) : (a.open ? "Still open" : "");
  }

  const SVG = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  // "Nice" steps for an axis: the first of `steps` giving at most `most` ticks over `span`.
  function step(span, most, steps) { return steps.find((s) => span / s <= most) || steps[steps.length - 1]; }
  const MINUTE = 60000, HOUR = 3600000, DAY = 86400000;
  const TIME_STEPS = [MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY];
  function tickLabel(ms, stepMs) {
    const d = new Date(ms);
    if (stepMs >= DAY) return d.toLocaleDateString(undefined, { month: "short", day: "numeric" });
    const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
    return d.getHours() === 0 && d.getMinutes() === 0 ? d.toLocaleDateString(undefined, { month: "short", day: "numeric" }) : time;
  }

  // Heart rate against local time: labelled axes, the person's low and high limits as dashed
  // lines, each alert's moment as a marked vertical line, gaps of over 5 minutes left open.
  // Drawn at the box's width in pixels so that text is never stretched; redrawn on resize.
  function heartChart(svg, samples, opts) {
    const box = svg.parentElement;
    const W = Math.max(280, Math.floor(box.clientWidth || 600)), H = 240;
    const m = { left: 52, right: 14, top: 14, bottom: 44 };
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.replaceChildren();
    const from = opts.from, to = Math.max(opts.to, from + MINUTE);
    const limits = opts.limits || {};
    const set = limits.set || {};
    const values = samples.map((s) => s.bpm).concat([limits.min, limits.max, set.min, set.max].filter((v) => typeof v === "number"));
    // Room beyond the outer lines for a label drawn on their far side (a device's own limit).
    const pad = limits.onDevice && Object.keys(limits.onDevice).length ? 20 : 10;
    const lo = Math.max(0, Math.floor((Math.min(...values, 60) - pad) / 10) * 10), hi = Math.ceil((Math.max(...values, 100) + pad) / 10) * 10;
    const x = (ms) => m.left + ((ms - from) / (to - from)) * (W - m.left - m.right);
    const y = (bpm) => H - m.bottom - ((bpm - lo) / (hi - lo)) * (H - m.top - m.bottom);
    const axes = svgEl("g", { class: "axes" });
    axes.append(svgEl("line", { x1: m.left, y1: H - m.bottom, x2: W - m.right, y2: H - m.bottom, class: "axis" }));
    axes.append(svgEl("line", { x1: m.left, y1: m.top, x2: m.left, y2: H - m.bottom, class: "axis" }));
    const vStep = step(hi - lo, 6, [10, 20, 25, 50, 100]);
    for (let v = Math.ceil(lo / vStep) * vStep; v <= hi; v += vStep) {
      axes.append(svgEl("line", { x1: m.left, y1: y(v), x2: W - m.right, y2: y(v), class: "grid" }));
      axes.append(svgEl("text", { x: m.left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick y-tick" }, String(v)));
    }
    const tStep = step(to - from, Math.max(2, Math.floor((W - m.left - m.right) / 90)), TIME_STEPS);
    const offset = new Date(from).getTimezoneOffset() * MINUTE;
    for (let t = Math.ceil((from - offset) / tStep) * tStep + offset; t <= to; t += tStep) {
      axes.append(svgEl("line", { x1: x(t), y1: H - m.bottom, x2: x(t), y2: H - m.bottom + 4, class: "axis" }));
      axes.append(svgEl("text", { x: x(t), y: H - m.bottom + 16, "text-anchor": "middle", class: "tick x-tick" }, tickLabel(t, tStep)));
    }
    axes.append(svgEl("text", { x: (m.left + W - m.right) / 2, y: H - 6, "text-anchor": "middle", class: "axis-title x-title" }, "Time (" + zone + ")"));
    axes.append(svgEl("text", { x: 12, y: (m.top + H - m.bottom) / 2, transform: "rotate(-90 12 " + (m.top + H - m.bottom) / 2 + ")", "text-anchor": "middle", class: "axis-title y-title" }, "Heart rate (bpm)"));
    svg.append(axes);
    // Where the device's own configuration overrides a limit, its value is the line in force and
    // the value set here is drawn faintly as not in force.
    for (const [key, name] of [["min", "low"], ["max", "high"]]) {
      const value = limits[key];
      if (typeof value !== "number") continue;
      const onDevice = limits.onDevice && limits.onDevice[key];
      // Each label on the side of its line away from the other line.
      let labelY = y(value) - 5;
      if (onDevice && typeof set[key] === "number") {
        const setAbove = set[key] > value;
        if (setAbove) labelY = y(value) + 14;
        svg.append(svgEl("line", { x1: m.left, y1: y(set[key]), x2: W - m.right, y2: y(set[key]), class: "limit-overridden limit-overridden-" + name }));
        svg.append(svgEl("text", { x: m.left + 6, y: y(set[key]) + (setAbove ? -5 : 14), class: "limit-label-overridden limit-label-overridden-" + name },
          "set here " + set[key] + " bpm, not in force"));
      }
      svg.append(svgEl("line", { x1: m.left, y1: y(value), x2: W - m.right, y2: y(value), class: "limit limit-" + name + (onDevice ? " limit-device" : "") }));
      svg.append(svgEl("text", { x: W - m.right - 4, y: labelY, "text-anchor": "end", class: "limit-label limit-label-" + name },
        (name === "low" ? "low limit " : "high limit ") + value + " bpm" + (onDevice ? " (the device's own, in force)" : "")));
    }
    let d = "", last = null;
    for (const s of samples) {
      d += (last === null || s.at_ms - last > 5 * MINUTE ? "M" : "L") + x(s.at_ms).toFixed(1) + "," + y(s.bpm).toFixed(1);
      last = s.at_ms;
    }
    if (d) svg.append(svgEl("path", { d, class: "data" }));
    if (samples.length === 1) svg.append(svgEl("circle", { cx: x(samples[0].at_ms), cy: y(samples[0].bpm), r: 3, class: "data-point" }));
    for (const a of opts.alerts || []) {
      if (a.created_ms < from || a.created_ms > to) continue;
      const mark = svgEl("g", { class: "alert-mark" });
      mark.append(svgEl("line", { x1: x(a.created_ms), y1: m.top, x2: x(a.created_ms), y2: H - m.bottom }));
      mark.append(svgEl("path", { d: "M" + (x(a.created_ms) - 6) + "," + m.top + " h12 l-6,9 z" }));
      mark.append(svgEl("title", {}, words(KINDS, a.kind) + " at " + when(a.created_ms)));
      svg.append(mark);
    }
  }

  // Positions on a scaled grid (equirectangular around their middle): a scale bar, a north arrow,
  // the start and the last position marked.
  function trackChart(svg, positions) {
    const box = svg.parentElement;
    const W = Math.max(280, Math.floor(box.clientWidth || 600)), H = Math.min(360, Math.max(220, Math.round(W * 0.6)));
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.replaceChildren();
    if (!positions.length) { svg.append(svgEl("text", { x: 16, y: H / 2, class: "tick" }, "No position in this period.")); return; }
    const lat0 = positions.reduce((s, p) => s + p.lat, 0) / positions.length;
    const kx = Math.cos((lat0 * Math.PI) / 180) * 111320, ky = 110540;
    const xs = positions.map((p) => p.lon * kx), ys = positions.map((p) => p.lat * ky);
    const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
    const span = Math.max(100, maxX - minX, ((maxY - minY) * W) / H) * 1.2;
    const scale = W / span, cx = (minX + maxX) / 2, cy = (minY + maxY) / 2;
    const px = (v) => W / 2 + (v - cx) * scale, py = (v) => H / 2 - (v - cy) * scale;
    const grid = step(span, 8, [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]);
    for (let g = Math.floor((cx - span) / grid) * grid; g <= cx + span; g += grid) svg.append(svgEl("line", { x1: px(g), y1: 0, x2: px(g), y2: H, class: "grid" }));
    for (let g = Math.floor((cy - span) / grid) * grid; g <= cy + span; g += grid) svg.append(svgEl("line", { x1: 0, y1: py(g), x2: W, y2: py(g), class: "grid" }));
    svg.append(svgEl("polyline", { points: xs.map((v, i) => px(v).toFixed(1) + "," + py(ys[i]).toFixed(1)).join(" "), class: "track" }));
    svg.append(svgEl("circle", { cx: px(xs[0]), cy: py(ys[0]), r: 5, class: "start" }, undefined));
    svg.append(svgEl("circle", { cx: px(xs[xs.length - 1]), cy: py(ys[ys.length - 1]), r: 6, class: "last" }));
    svg.append(svgEl("line", { x1: 14, y1: H - 16, x2: 14 + grid * scale, y2: H - 16, class: "scale-bar" }));
    svg.append(svgEl("text", { x: 14, y: H - 22, class: "tick scale" }, grid >= 1000 ? grid / 1000 + " km" : grid + " m"));
    svg.append(svgEl("path", { d: "M" + (W - 24) + ",40 l8,-22 l8,22 l-8,-6 z", class: "north" }));
    svg.append(svgEl("text", { x: W - 16, y: 54, "text-anchor": "middle", class: "tick north-label" }, "N"));
  }

  // With map tiles configured (`--tile-url`, the console's settings) the track goes on a Leaflet
  // map, Leaflet being Debian's copy this server serves; otherwise on the scaled grid above.
  let leafletReady = null;
  function leaflet() {
    if (!leafletReady) {
      leafletReady = (async () => {
        let config;
        try { config = await api("GET", "/v1/console/config"); } catch (e) { return null; }
        if (!config.leaflet || !config.tile_url) return null;
        if (!window.L) {
          const css = el("link"); css.rel = "stylesheet"; css.href = "/assets/leaflet/leaflet.css"; document.head.append(css);
          await new Promise((resolve) => {
            const js = el("script"); js.src = "/assets/leaflet/leaflet.js";
            js.addEventListener("load", resolve); js.addEventListener("error", resolve);
            document.head.append(js);
          });
        }
        return window.L ? config : null;
      })();
    }
    return leafletReady;
  }

  let trackMapState = null;
  function trackMap(config, positions) {
    const L = window.L;
    $("pos-box").hidden = true;
    $("pos-map").hidden = false;
    if (!trackMapState) {
      const map = L.map($("pos-map"), { attributionControl: false });
      L.tileLayer(config.tile_url, { maxZoom: 19 }).addTo(map);
      L.control.scale().addTo(map);
      trackMapState = { map, layer: L.layerGroup().addTo(map) };
    }
    const { map, layer } = trackMapState;
    map.invalidateSize();
    layer.clearLayers();
    if (!positions.length) { map.setView([0, 0], 1); return; }
    const points = positions.map((p) => [p.lat, p.lon]);
    const line = L.polyline(points, { color: "#46a758", weight: 3, className: "track-line" }).addTo(layer);
    L.circleMarker(points[0], { radius: 5, color: "#e8edf2", fill: false, className: "track-start" }).addTo(layer).bindTooltip("Start " + when(positions[0].at_ms));
    L.circleMarker(points[points.length - 1], { radius: 6, color: "#ff6b6b", fillOpacity: 1, className: "track-last" }).addTo(layer)
      .bindTooltip("Last " + when(positions[positions.length - 1].at_ms));
    map.fitBounds(line.getBounds(), { maxZoom: 17, padding: [24, 24] });
  }

  // The position in OpenStreetMap, as the console's card links it.
  const mapsLink = (lat, lon) => { const a = Number(lat).toFixed(5), o = Number(lon).toFixed(5); return "https://www.openstreetmap.org/?mlat=" + a + "&mlon=" + o + "#map=17/" + a + "/" + o; };

  // The person's heart-rate limits in force on their device: the care settings' when set, else
  // the profile's; where the device reports its own configuration overriding a threshold, the
  // device's value (`onDevice`), with the one set here kept in `set`.
  const OVERRIDES = { min: "heart_rate_low.threshold_bpm", max: "heart_rate_high.threshold_bpm" };
  function inForce(limits, care) {
    const s = (care && care.settings) || {};
    if (typeof s.min_hr === "number") limits.min = s.min_hr;
    if (typeof s.max_hr === "number") limits.max = s.max_hr;
    limits.set = { min: limits.min, max: limits.max };
    limits.onDevice = {};
    const overrides = (care && care.device_overrides) || {};
    for (const [key, field] of Object.entries(OVERRIDES)) {
      if (typeof overrides[field] === "number") { limits[key] = overrides[field]; limits.onDevice[key] = true; }
    }
    return limits;
  }
  async function limitsOf(personID) {
    const profile = await api("GET", "/v1/people/" + encodeURIComponent(personID));
    const limits = { min: profile.limits ? profile.limits.min : null, max: profile.limits ? profile.limits.max : null };
    let care = null;
    if (profile.devices.length) {
      try { care = await api("GET", "/v1/devices/" + encodeURIComponent(profile.devices[0].device_id) + "/care-settings"); } catch (e) { /* the profile's limits */ }
    }
    return inForce(limits, care);
  }
  // "limits 50 to 120 bpm", saying which limit is the device's own.
  function limitsText(limits) {
    if (typeof limits.min !== "number" || typeof limits.max !== "number") return "";
    const own = (key) => limits.onDevice && limits.onDevice[key]
      ? " (the device's own, in force" + (typeof limits.set[key] === "number" ? " over " + limits.set[key] + " set here" : "") + ")" : "";
    return "limits " + limits.min + own("min") + " to " + limits.max + own("max") + " bpm";
  }

  function hrSummary(samples, limits, alerts, truncated) {
    if (!samples.length) return "No heart-rate readings in this period.";
    const bpm = samples.map((s) => s.bpm);
    return samples.length + (samples.length === 1 ? " reading" : " readings") + (truncated ? " (first part only)" : "") + " from " + when(samples[0].at_ms) + " to " + when(samples[samples.length - 1].at_ms)
      + ": lowest " + Math.min(...bpm) + ", highest " + Math.max(...bpm) + " bpm"
      + (limitsText(limits) ? "; " + limitsText(limits) : "")
      + (alerts.length ? "; " + alerts.length + " alert" + (alerts.length === 1 ? "" : "s") + " marked" : "") + ".";
  }

  const charts = { wearer: null, carer: null };
  window.addEventListener("resize", () => {
    for (const draw of Object.values(charts)) if (draw) draw();
  });

  async function loadWearerData() {
    const q = spanQuery();
    const from = fromLocalInput($("span-from").value), to = fromLocalInput($("span-to").value);
    $("download-json").href = "/v1/people/me/export?format=json&" + q;
    $("download-csv").href = "/v1/people/me/export?format=csv&" + q;
    $("download-gpx").href = "/v1/people/me/track.gpx?" + q;
    const [hr, pos, stats, alerts, limits] = await Promise.all([
      api("GET", "/v1/people/me/heart-rate?" + q), api("GET", "/v1/people/me/positions?" + q),
      api("GET", "/v1/people/me/statistics?" + q), api("GET", "/v1/people/me/alerts"), limitsOf("me"),
    ]);
    const inSpan = alerts.alerts.filter((a) => a.created_ms >= from && a.created_ms <= to);
    $("hr-summary").textContent = hrSummary(hr.heart_rate, limits, inSpan, hr.truncated);
    const positions = pos.positions;
    $("pos-summary").textContent = positions.length
      ? positions.length + " positions from " + when(positions[0].at_ms) + " to " + when(positions[positions.length - 1].at_ms) + "; the start ringed, the last position filled."
      : "No position in this period.";
    const tiles = await leaflet();
    charts.wearer = () => {
      heartChart($("hr-chart"), hr.heart_rate, { from, to, limits, alerts: inSpan });
      if (tiles) trackMap(tiles, positions); else trackChart($("pos-chart"), positions);
    };
    charts.wearer();
    const lastFix = positions[positions.length - 1];
    $("pos-open").hidden = !lastFix;
    $("pos-open-where").textContent = lastFix ? "the last position, " + lastFix.lat.toFixed(5) + ", " + lastFix.lon.toFixed(5) + " at " + when(lastFix.at_ms) : "";
    if (lastFix) $("pos-open").href = mapsLink(lastFix.lat, lastFix.lon);
    table($("stats"), ["day", "readings", "lowest (bpm)", "mean (bpm)", "highest (bpm)", "resting (bpm)", "outside your limits"],
      stats.days.map((d) => [day(d.day_ms), d.readings, d.min, d.mean, d.max, d.resting_estimate, Math.round(d.seconds_out_of_range / 60) + " min"]));
    table($("alerts"), ["opened", "what", "state", "outcome", "closed"],
      alerts.alerts.map((a) => [when(a.created_ms), words(KINDS, a.kind), words(STATES, a.state), outcomeText(a), when(a.resolved_ms)]));
  }

  // The wearer's consents and access log.
  async function loadWearerRequests() {
    const [requests, log] = await Promise.all([api("GET", "/v1/people/me/access-requests?limit=1000"), api("GET", "/v1/people/me/access-log?limit=1000")]);
    table($("requests"), ["organisation", "asks for", "for", "purpose", "window", "status", ""],
      requests.requests.map((r) => {
        const actions = el("span");
        actions.className = "actions";
        const act = (label, verb) => {
          const button = el("button", label);
          button.dataset.action = verb;
          button.dataset.request = r.id;
          button.addEventListener("click", async () => {
            try { await api("POST", "/v1/access-requests/" + encodeURIComponent(r.id) + "/" + verb); } catch (e) { $("requests").dataset.error = e.message; }
            loadWearerRequests();
          });
          actions.appendChild(button);
        };
        if (r.status === "pending") { act("Approve", "approve"); act("Refuse", "refuse"); }
        if (r.status === "approved") act("Revoke", "revoke");
        const status = el("span", r.status.replace(/_/g, " "), "status-" + r.status);
        const row = [r.organisation_name, kindList(r.kinds), r.days + " days", r.purpose, grantWindow(r), status, actions];
        return row;
      }));
    for (const [index, tr] of Array.from($("requests").querySelectorAll("tr")).slice(1).entries()) tr.dataset.request = requests.requests[index].id;
    table($("access-log"), ["when", "who", "role", "why", "what"],
      log.entries.map((e) => [when(e.at_ms), e.reader_name, words(ROLES, e.reader_role), e.reason.split(",").map((r) => words(REASONS, r)).join(", "), whatText(e.what)]));
  }

  // Care settings (thresholds, rule switches, contacts) of one device: the version on the
  // server, the version the device reports running, and the fields the device's own
  // configuration overrides (a conflict: the device's value wins there).
  const RULES = [["heart_rate_low", "Heart rate too low"], ["heart_rate_high", "Heart rate too high"], ["no_pulse", "No pulse"],
    ["lethal_rhythm", "Lethal rhythm (VF, VT)"], ["contact_lost", "Strap contact lost"], ["strap_silent", "Strap silent"], ["manual", "SOS button (always on)"]];
  const FIELDS = { "heart_rate_low.threshold_bpm": "the low heart-rate limit", "heart_rate_high.threshold_bpm": "the high heart-rate limit" };
  function conflictText(field, view) {
    const own = view && view.device_overrides ? view.device_overrides[field] : undefined;
    if (FIELDS[field]) return FIELDS[field] + (typeof own === "number" ? ": " + own + " bpm on the device" : "");
    const rule = RULES.find((r) => field === r[0] + ".enabled");
    return rule ? "whether \u201c" + rule[1] + "\u201d is on" : field;
  }

  async function careForm(container, deviceID) {
    const box = el("section", null, "care-device");
    box.dataset.device = deviceID;
    container.appendChild(box);
    await fillCare(box, deviceID, "");
  }

  // What the device runs, kept on its box: the poll below compares the device's report with it.
  function versionKey(settingsVersion, deviceVersion, conflicts) {
    return [settingsVersion ?? "", deviceVersion ?? "", (conflicts || []).join(",")].join("|");
  }
  function runningText(settingsVersion, view) {
    const reported = view.device_reported_ms ? " (reported " + when(view.device_reported_ms) + ")" : "";
    if (view.device_version === null || view.device_version === undefined) {
      return ["The device has not reported running any version from the server yet." + (settingsVersion ? " It takes version " + settingsVersion + " at its next sync." : ""),
        settingsVersion ? "care-pending" : ""];
    }
    if (settingsVersion && view.device_version < settingsVersion) {
      return ["The device runs version " + view.device_version + reported + "; it takes version " + settingsVersion + " at its next sync.", "care-pending"];
    }
    return ["The device runs version " + view.device_version + reported + ".", "care-current"];
  }

  // The device's report refreshes by itself: a light poll of the versions alone (not a read of
  // the settings, so not logged); when they changed, the settings are read again, unless the
  // form holds changes not yet saved: then only the version line changes. `?care_poll_ms=`
  // shortens the period (the browser tests).
  const carePollMs = Math.max(200, Number(new URLSearchParams(location.search).get("care_poll_ms")) || 15000);
  async function pollCare() {
    if (document.hidden) return;
    for (const box of document.querySelectorAll(".care-device[data-device]")) {
      if (!box.offsetParent || !box.dataset.versions) continue;
      const deviceID = box.dataset.device;
      let now;
      try { now = await api("GET", "/v1/devices/" + encodeURIComponent(deviceID) + "/care-version"); } catch (e) { continue; }
      if (versionKey(now.settings_version, now.device_version, now.device_conflicts) === box.dataset.versions) continue;
      if (box.dataset.dirty === "true") {
        const [text, cls] = runningText(now.settings_version, now);
        const line = box.querySelector(".care-device-version");
        if (line) { line.textContent = text; line.className = "care-device-version " + cls; }
        box.dataset.versions = versionKey(now.settings_version, now.device_version, now.device_conflicts);
      } else {
        await fillCare(box, deviceID, "");
        // The AutomatedSOS line says whether the device has learnt it yet: read it again too.
        const container = box.parentElement, shown = container && container.querySelector(".automated-sos");
        const personID = container && container.dataset.person;
        if (shown && personID) shown.replaceWith(await automatedSOS(personID, () => careForms(container, personID)));
      }
    }
  }
  setInterval(() => { pollCare().catch(() => { /* the next round tries again */ }); }, carePollMs);

  async function fillCare(box, deviceID, note) {
    let view;
    try { view = await api("GET", "/v1/devices/" + encodeURIComponent(deviceID) + "/care-settings"); } catch (e) {
      box.replaceChildren(el("p", e.message, "care-message"));
      return;
    }
    const s = view.settings || {};
    box.dataset.versions = versionKey(s.version, view.device_version, view.device_conflicts);
    box.dataset.dirty = "false";
    box.replaceChildren();
    box.appendChild(el("h3", "Device " + deviceID));
    const server = s.version
      ? "On the server: version " + s.version + ", set by " + (view.updated_by_name || view.updated_by) + " on " + when(view.updated_ms) + "."
      : "Nothing set on the server yet: the device uses its own configuration.";
    box.appendChild(el("p", server, "care-server-version"));
    const [running, runningClass] = runningText(s.version, view);
    const runningLine = el("p", running, "care-device-version " + runningClass);
    runningLine.setAttribute("role", "status");
    box.appendChild(runningLine);
    if (view.device_conflicts && view.device_conflicts.length) {
      const conflict = el("div", null, "care-conflict");
      conflict.appendChild(el("strong", "Conflict: the device's own configuration overrides the server here, and its value is the one in force: "));
      conflict.appendChild(el("span", view.device_conflicts.map((f) => conflictText(f, view)).join("; ") + "."));
      conflict.dataset.fields = view.device_conflicts.join(",");
      box.appendChild(conflict);
    }
    const form = el("form", null, "care-form");
    const number = (cls, label, value) => {
      const wrap = el("label", label + " ");
      const input = el("input", null, cls);
      input.type = "number"; input.min = "20"; input.max = "250";
      input.value = value === undefined || value === null ? "" : String(value);
      wrap.appendChild(input);
      form.appendChild(wrap);
      return input;
    };
    const min = number("care-min", "Low limit (bpm)", s.min_hr);
    const max = number("care-max", "High limit (bpm)", s.max_hr);
    const resting = number("care-resting", "Resting (bpm)", s.resting_hr);
    const profileLabel = el("label", "Care profile ");
    const profile = el("select", null, "care-profile");
    for (const [value, text] of [["wearable", "Up and about (exercise is normal)"], ["bedside", "In bed or cared for at home (bedside monitor limits)"]]) {
      const option = el("option", text);
      option.value = value;
      option.selected = (s.care_profile || "wearable") === value;
      profile.appendChild(option);
    }
    profileLabel.appendChild(profile);
    form.appendChild(profileLabel);
    const rules = el("div", null, "rules");
    for (const [rule, label] of RULES) {
      const wrap = el("label");
      const input = el("input", null, "care-rule");
      input.type = "checkbox"; input.dataset.rule = rule;
      input.checked = !(s.rules && s.rules[rule] === false);
      input.disabled = rule === "manual";
      wrap.appendChild(input);
      wrap.appendChild(document.createTextNode(" " + label));
      rules.appendChild(wrap);
    }
    form.appendChild(rules);
    const contactsLabel = el("label", "Emergency contacts (one a line: name; relation; phone)", "wide");
    const contacts = el("textarea", null, "care-contacts");
    contacts.value = (s.contacts || []).map((c) => [c.name, c.relation || "", c.phone || ""].join("; ")).join("\n");
    contactsLabel.appendChild(contacts);
    form.appendChild(contactsLabel);
    // tell_contacts_at_raise: unset is the server's default (at once for the SOS button only).
    const atRaiseLabel = el("label", "Tell the contacts ", "wide");
    const atRaise = el("select", null, "care-at-raise");
    for (const [value, text] of [["", "at once for the SOS button, otherwise if nobody acknowledges (default)"],
      ["true", "as soon as any alert is raised"], ["false", "only if nobody acknowledges the alert"]]) {
      const option = el("option", text);
      option.value = value;
      option.selected = (s.tell_contacts_at_raise === undefined || s.tell_contacts_at_raise === null ? "" : String(s.tell_contacts_at_raise)) === value;
      atRaise.appendChild(option);
    }
    atRaiseLabel.appendChild(atRaise);
    form.appendChild(atRaiseLabel);
    const discreetLabel = el("label", null, "wide");
    const discreet = el("input", null, "care-discreet");
    discreet.type = "checkbox"; discreet.checked = s.discreet_sos === true;
    discreetLabel.append(discreet, document.createTextNode(" Discreet SOS: the device shows and sounds nothing of any alert (for a wearer under threat)"));
    form.appendChild(discreetLabel);
    form.addEventListener("input", () => { box.dataset.dirty = "true"; });
    const save = el("button", "Save", "care-save");
    save.type = "submit";
    form.appendChild(save);
    box.appendChild(form);
    const message = el("p", note, "care-message");
    message.setAttribute("role", "status");
    box.appendChild(message);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const value = (input) => input.value === "" ? null : Number(input.value);
      const body = {
        min_hr: value(min), max_hr: value(max), resting_hr: value(resting), care_profile: profile.value, rules: {},
        contacts: contacts.value.split("\n").map((line) => line.split(";").map((x) => x.trim())).filter((p) => p[0])
          .map((p) => ({ name: p[0], relation: p[1] || null, phone: p[2] || null })),
        tell_contacts_at_raise: atRaise.value === "" ? null : atRaise.value === "true",
        discreet_sos: discreet.checked || null,
      };
      for (const input of form.querySelectorAll(".care-rule")) if (input.dataset.rule !== "manual") body.rules[input.dataset.rule] = input.checked;
      try {
        const stored = await api("PUT", "/v1/devices/" + encodeURIComponent(deviceID) + "/care-settings", body);
        await fillCare(box, deviceID, "Saved version " + stored.version + "; it reaches the device at its next sync.");
      } catch (e) {
        message.textContent = e.message;
      }
    });
  }

  // AutomatedSOS, the service the person is enrolled in: whether the rules' alerts go to a
  // dispatcher and who provides it. The person switches it here; a carer reads it.
  async function automatedSOS(personID, refresh) {
    const box = el("section", null, "automated-sos");
    box.appendChild(el("h3", "AutomatedSOS"));
    let view;
    try { view = await api("GET", "/v1/people/" + encodeURIComponent(personID) + "/automated-sos"); } catch (e) {
      box.appendChild(el("p", e.message, "automated-sos-message"));
      return box;
    }
    const s = view.service;
    const text = s.active
      ? "On: alerts the rules raise go to a dispatcher. Provided by " + s.provider + "."
      : "Off: the device still records and the SOS button still reaches a dispatcher, but alerts the rules raise reach no dispatcher and no contact, and the device calls nobody for them (the wearer still sees them).";
    box.appendChild(el("p", text, "automated-sos-state " + (s.active ? "care-current" : "care-pending")));
    const pending = view.devices.filter((d) => d.settings_version && d.device_version !== d.settings_version);
    if (pending.length) box.appendChild(el("p", "The device " + pending.map((d) => d.device_id).join(", ") + " learns it at its next sync.", "muted"));
    if (personID === "me") {
      const button = el("button", s.active ? "Turn AutomatedSOS off" : "Turn AutomatedSOS on", "automated-sos-switch");
      button.type = "button";
      const message = el("p", null, "automated-sos-message");
      message.setAttribute("role", "status");
      button.addEventListener("click", async () => {
        try {
          await api("PUT", "/v1/people/me/automated-sos", { active: !s.active });
          // The switch is the next care settings version of each device: the forms show it too.
          await refresh();
        } catch (e) {
          message.textContent = e.message;
        }
      });
      box.append(button, message);
    }
    return box;
  }

  async function careForms(container, personID) {
    container.dataset.person = personID;
    container.replaceChildren();
    container.appendChild(await automatedSOS(personID, () => careForms(container, personID)));
    const profile = await api("GET", "/v1/people/" + encodeURIComponent(personID));
    if (profile.devices.length === 0) container.appendChild(el("p", "No device is linked yet.", "muted"));
    for (const device of profile.devices) await careForm(container, device.device_id);
  }

  // The wearer's care settings and carers.
  async function loadWearerCare() {
    await careForms($("care-forms"), "me");
    await loadCarers();
  }

  async function loadCarers() {
    const list = await api("GET", "/v1/people/me/carers");
    table($("carers"), ["carer", "username", "downloads", "since", ""],
      list.carers.map((c) => {
        const remove = el("button", "Remove");
        remove.dataset.action = "remove-carer";
        remove.dataset.carer = c.carer_id;
        remove.addEventListener("click", async () => {
          try { await api("DELETE", "/v1/people/me/carers/" + encodeURIComponent(c.carer_id)); } catch (e) { $("carer-message").textContent = e.message; }
          loadCarers();
        });
        return [c.display_name, c.username, c.may_export ? "allowed" : "no", when(c.granted_ms), remove];
      }));
    for (const [index, tr] of Array.from($("carers").querySelectorAll("tr")).slice(1).entries()) tr.dataset.carer = list.carers[index].carer_id;
  }

  $("carer-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const link = await api("POST", "/v1/people/me/carers", { carer: $("carer-username").value.trim(), may_export: $("carer-export").checked });
      $("carer-message").textContent = link.display_name + " is now your carer.";
      $("carer-username").value = "";
    } catch (e) {
      $("carer-message").textContent = e.message;
    }
    loadCarers();
  });

  // A carer: the people they care for.
  async function loadCaredFor() {
    const list = await api("GET", "/v1/cared-for");
    if (list.people.length === 0) $("carer-person").hidden = true;
    table($("cared-for"), ["person", "username", "devices", "downloads", ""],
      list.people.map((p) => {
        const actions = el("span", null, "actions");
        const open = el("button", "Open");
        open.dataset.action = "open-person";
        open.addEventListener("click", () => openPerson(p));
        actions.appendChild(open);
        const stop = el("button", "Stop caring");
        stop.dataset.action = "step-down";
        stop.addEventListener("click", async () => {
          try { await api("DELETE", "/v1/people/" + encodeURIComponent(p.person_id) + "/carers/me"); } catch (e) { /* shown by the reload */ }
          $("carer-person").hidden = true;
          loadCaredFor();
        });
        actions.appendChild(stop);
        return [p.display_name, p.username, p.devices.join(", "), p.may_export ? "allowed" : "not allowed", actions];
      }));
    for (const [index, tr] of Array.from($("cared-for").querySelectorAll("tr")).slice(1).entries()) tr.dataset.person = list.people[index].person_id;
  }

  // Each device's protection state as the console's device list shows it to a dispatcher
  // (Pages/protection.js): paused, AutomatedSOS off, batteries, the store, silent, each with how long.
  async function showProtection(list, id) {
    list.replaceChildren();
    let view;
    try { view = await api("GET", "/v1/people/" + id + "/protection"); } catch (e) { list.appendChild(el("li", e.message)); return; }
    if (!view.devices.length) list.appendChild(el("li", "No device is linked yet.", "muted"));
    for (const d of view.devices) {
      const item = el("li", null, "device-protection");
      item.dataset.deviceId = d.device_id;
      item.appendChild(el("span", d.device_id + " (last heard from " + Protection.ago(d.last_seen_ms) + "): "));
      const badges = Protection.badges(d);
      for (const [text, kind] of badges) {
        item.appendChild(el("span", text, "badge " + kind));
        item.appendChild(document.createTextNode(" "));
      }
      if (!badges.length) item.appendChild(el("span", "protected as usual", "protection-ok"));
      list.appendChild(item);
    }
  }

  async function openPerson(p) {
    $("carer-person").hidden = false;
    $("carer-person-name").textContent = p.display_name;
    const id = encodeURIComponent(p.person_id);
    const downloads = $("carer-person-downloads");
    downloads.replaceChildren();
    if (p.may_export) {
      for (const [label, href] of [["JSON", "/v1/people/" + id + "/export?format=json"], ["CSV", "/v1/people/" + id + "/export?format=csv"], ["GPX", "/v1/people/" + id + "/track.gpx"]]) {
        const a = el("a", label, "button");
        a.href = href; a.download = ""; a.id = "carer-download-" + label.toLowerCase();
        downloads.appendChild(a);
        downloads.appendChild(document.createTextNode(" "));
      }
    } else {
      downloads.appendChild(el("span", p.display_name + " has not allowed downloads.", "muted"));
    }
    await showProtection($("carer-protection"), id);
    try {
      const now = Date.now();
      const [hr, alerts] = await Promise.all([
        api("GET", "/v1/people/" + id + "/heart-rate?from=" + (now - 86400000) + "&to=" + (now + 60000)), api("GET", "/v1/people/" + id + "/alerts"),
      ]);
      const last = hr.heart_rate.length ? hr.heart_rate[hr.heart_rate.length - 1] : null;
      const limits = await limitsOf(p.person_id);
      const from = now - 86400000, to = now + 60000;
      const inSpan = alerts.alerts.filter((a) => a.created_ms >= from && a.created_ms <= to);
      $("carer-hr-summary").textContent = hr.heart_rate.length + " readings" + (last ? "; last " + last.bpm + " bpm at " + when(last.at_ms) : "")
        + (limitsText(limits) ? "; " + limitsText(limits) : "") + ".";
      charts.carer = () => heartChart($("carer-hr-chart"), hr.heart_rate, { from, to, limits, alerts: inSpan });
      charts.carer();
      table($("carer-alerts"), ["opened", "what", "state", "outcome"],
        alerts.alerts.map((a) => [when(a.created_ms), words(KINDS, a.kind), words(STATES, a.state), outcomeText(a)]));
    } catch (e) {
      $("carer-hr-summary").textContent = e.message;
    }
    await careForms($("carer-care-forms"), p.person_id);
  }

  // An organisation's requests and reads.
  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const kinds = Array.from(document.querySelectorAll(".ask-kind")).filter((c) => c.checked).map((c) => c.value);
    try {
      await api("POST", "/v1/access-requests", { person: $("ask-person").value, kinds, days: Number($("ask-days").value), purpose: $("ask-purpose").value });
      $("ask-message").textContent = "Request sent.";
      loadOrgRequests();
    } catch (e) {
      $("ask-message").textContent = e.message;
    }
  });

  async function loadOrgRequests() {
    const list = await api("GET", "/v1/access-requests?limit=1000");
    table($("org-request-list"), ["person", "data", "status", "window", ""],
      list.requests.map((r) => {
        const actions = el("span");
        if (r.status === "approved") {
          const read = el("button", "Read");
          read.dataset.action = "read";
          read.addEventListener("click", () => readPerson(r));
          actions.appendChild(read);
          const revoke = el("button", "End access");
          revoke.dataset.action = "revoke";
          revoke.addEventListener("click", async () => { await api("POST", "/v1/access-requests/" + encodeURIComponent(r.id) + "/revoke"); loadOrgRequests(); });
          actions.appendChild(revoke);
        }
        return [r.person_name + " (" + r.person_username + ")", kindList(r.kinds), r.status.replace(/_/g, " "), grantWindow(r), actions];
      }));
  }

  async function readPerson(r) {
    $("org-read").hidden = false;
    $("org-read-title").textContent = r.person_name;
    try {
      const from = r.granted_from_ms || 0;
      const hr = await api("GET", "/v1/people/" + encodeURIComponent(r.person_id) + "/heart-rate?from=" + from);
      $("org-read-summary").textContent = hr.heart_rate.length + " heart-rate readings";
      table($("org-read-table"), ["at", "bpm"], hr.heart_rate.slice(-50).map((s) => [when(s.at_ms), s.bpm]));
    } catch (e) {
      $("org-read-summary").textContent = e.message;
      $("org-read-table").replaceChildren();
    }
  }

  $("group-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const to = Date.now();
    const body = {
      age_from: Number($("g-age-from").value), age_to: Number($("g-age-to").value),
      south: Number($("g-south").value), west: Number($("g-west").value), north: Number($("g-north").value), east: Number($("g-east").value),
      from_ms: to - Number($("g-days").value) * 86400000, to_ms: to,
    };
    try {
      const answer = await api("POST", "/v1/group-figures", body);
      $("group-answer").textContent = JSON.stringify(answer, null, 2);
    } catch (e) {
      $("group-answer").textContent = "Refused: " + e.message;
    }
  });

  start();
})();
