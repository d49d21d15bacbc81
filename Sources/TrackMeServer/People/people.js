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

  function when(ms) { return ms === null || ms === undefined ? "" : new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC"); }

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
    for (const h of headers) head.appendChild(el("th", h));
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

  function polyline(svg, points, width, height, className) {
    svg.replaceChildren();
    if (points.length === 0) return;
    const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
    const sx = (x) => (x1 === x0 ? width / 2 : ((x - x0) / (x1 - x0)) * (width - 10) + 5);
    const sy = (y) => (y1 === y0 ? height / 2 : height - 5 - ((y - y0) / (y1 - y0)) * (height - 10));
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", points.map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" "));
    if (className) line.setAttribute("class", className);
    svg.appendChild(line);
  }

  async function loadWearerData() {
    const q = spanQuery();
    $("download-json").href = "/v1/people/me/export?format=json&" + q;
    $("download-csv").href = "/v1/people/me/export?format=csv&" + q;
    $("download-gpx").href = "/v1/people/me/track.gpx?" + q;
    const [hr, pos, stats, alerts] = await Promise.all([
      api("GET", "/v1/people/me/heart-rate?" + q), api("GET", "/v1/people/me/positions?" + q),
      api("GET", "/v1/people/me/statistics?" + q), api("GET", "/v1/people/me/alerts"),
    ]);
    $("hr-summary").textContent = hr.heart_rate.length + " readings" + (hr.truncated ? " (first part only)" : "");
    polyline($("hr-chart"), hr.heart_rate.map((s) => [s.at_ms, s.bpm]), 600, 120);
    $("pos-summary").textContent = pos.positions.length + " positions";
    polyline($("pos-chart"), pos.positions.map((p) => [p.lon, p.lat]), 600, 200, "track");
    table($("stats"), ["day", "readings", "min", "mean", "max", "resting", "out of range"],
      stats.days.map((d) => [when(d.day_ms).slice(0, 10), d.readings, d.min, d.mean, d.max, d.resting_estimate, Math.round(d.seconds_out_of_range / 60) + " min"]));
    table($("alerts"), ["opened", "kind", "state", "outcome", "closed"],
      alerts.alerts.map((a) => [when(a.created_ms), a.kind, a.state, a.outcome ? a.outcome.replace(/_/g, " ") : (a.open ? "open" : ""), when(a.resolved_ms)]));
  }

  // The wearer's consents and access log.
  async function loadWearerRequests() {
    const [requests, log] = await Promise.all([api("GET", "/v1/people/me/access-requests"), api("GET", "/v1/people/me/access-log")]);
    table($("requests"), ["organisation", "asks for", "for", "purpose", "status", ""],
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
        const row = [r.organisation_name, r.kinds.join(", "), r.days + " days", r.purpose, status, actions];
        return row;
      }));
    for (const [index, tr] of Array.from($("requests").querySelectorAll("tr")).slice(1).entries()) tr.dataset.request = requests.requests[index].id;
    table($("access-log"), ["when", "who", "role", "why", "what"],
      log.entries.map((e) => [when(e.at_ms), e.reader_name, e.reader_role.replace(/_/g, " "), e.reason.replace(/_/g, " "), e.what]));
  }

  // Care settings (thresholds, rule switches, contacts) of one device: the version on the
  // server, the version the device reports running, and the fields the device's own
  // configuration overrides (a conflict: the device's value wins there).
  const RULES = [["heart_rate_low", "Heart rate too low"], ["heart_rate_high", "Heart rate too high"], ["no_pulse", "No pulse"],
    ["lethal_rhythm", "Lethal rhythm (VF, VT)"], ["contact_lost", "Strap contact lost"], ["strap_silent", "Strap silent"], ["manual", "SOS button (always on)"]];
  const FIELDS = { "heart_rate_low.threshold_bpm": "the low heart-rate limit", "heart_rate_high.threshold_bpm": "the high heart-rate limit" };
  function conflictText(field) {
    if (FIELDS[field]) return FIELDS[field];
    const rule = RULES.find((r) => field === r[0] + ".enabled");
    return rule ? "whether \u201c" + rule[1] + "\u201d is on" : field;
  }

  async function careForm(container, deviceID) {
    const box = el("section", null, "care-device");
    box.dataset.device = deviceID;
    container.appendChild(box);
    await fillCare(box, deviceID, "");
  }

  async function fillCare(box, deviceID, note) {
    let view;
    try { view = await api("GET", "/v1/devices/" + encodeURIComponent(deviceID) + "/care-settings"); } catch (e) {
      box.replaceChildren(el("p", e.message, "care-message"));
      return;
    }
    const s = view.settings || {};
    box.replaceChildren();
    box.appendChild(el("h3", "Device " + deviceID));
    const server = s.version
      ? "On the server: version " + s.version + ", set by " + (view.updated_by_name || view.updated_by) + " on " + when(view.updated_ms) + "."
      : "Nothing set on the server yet: the device uses its own configuration.";
    box.appendChild(el("p", server, "care-server-version"));
    let running, runningClass = "care-device-version";
    if (view.device_version === null || view.device_version === undefined) {
      running = "The device has not reported running any version from the server yet.";
      if (s.version) { running += " It takes version " + s.version + " at its next sync."; runningClass += " care-pending"; }
    } else if (s.version && view.device_version < s.version) {
      running = "The device runs version " + view.device_version + (view.device_reported_ms ? " (reported " + when(view.device_reported_ms) + ")" : "") + "; it takes version " + s.version + " at its next sync.";
      runningClass += " care-pending";
    } else {
      running = "The device runs version " + view.device_version + (view.device_reported_ms ? " (reported " + when(view.device_reported_ms) + ")" : "") + ".";
      runningClass += " care-current";
    }
    box.appendChild(el("p", running, runningClass));
    if (view.device_conflicts && view.device_conflicts.length) {
      const conflict = el("div", null, "care-conflict");
      conflict.appendChild(el("strong", "Conflict: the device's own configuration overrides the server here, and its value is the one in force: "));
      conflict.appendChild(el("span", view.device_conflicts.map(conflictText).join("; ") + "."));
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

  async function careForms(container, personID) {
    container.replaceChildren();
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
    try {
      const now = Date.now();
      const [hr, alerts] = await Promise.all([
        api("GET", "/v1/people/" + id + "/heart-rate?from=" + (now - 86400000) + "&to=" + (now + 60000)), api("GET", "/v1/people/" + id + "/alerts"),
      ]);
      const last = hr.heart_rate.length ? hr.heart_rate[hr.heart_rate.length - 1] : null;
      $("carer-hr-summary").textContent = hr.heart_rate.length + " readings" + (last ? "; last " + last.bpm + " bpm at " + when(last.at_ms) : "");
      table($("carer-alerts"), ["opened", "kind", "state", "outcome"],
        alerts.alerts.map((a) => [when(a.created_ms), a.kind, a.state, a.outcome ? a.outcome.replace(/_/g, " ") : (a.open ? "open" : "")]));
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
    const list = await api("GET", "/v1/access-requests");
    table($("org-request-list"), ["person", "data", "status", "until", ""],
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
        return [r.person_name + " (" + r.person_username + ")", r.kinds.join(", "), r.status.replace(/_/g, " "), when(r.expires_ms), actions];
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
