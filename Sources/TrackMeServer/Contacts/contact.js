// An emergency contact's page: follows one alert through its link (the path's signed token, the
// only credential) by reading /contact/TOKEN/live every few seconds until the alert closes, and
// confirms receipt. Every value from the server goes in with textContent.
"use strict";
(function () {
  const POLL_MS = 3000;
  const token = location.pathname.split("/")[2] || "";
  const base = "/contact/" + encodeURIComponent(token);
  const $ = (id) => document.getElementById(id);
  const KINDS = {
    manual: "pressed their SOS button", no_pulse: "no pulse detected", heart_rate_low: "heart rate too low",
    heart_rate_high: "heart rate too high", contact_lost: "the heart-rate strap lost contact", strap_silent: "the heart-rate strap went silent",
    lethal_rhythm: "a dangerous heart rhythm",
  };
  const OUTCOMES = {
    help_arrived: "help arrived", false_alarm: "it was a false alarm", wearer_safe: "they are safe",
    unreachable: "they could not be reached", cancelled: "they cancelled it on their device", resolved: "it was closed on their device",
  };
  let timer = null;
  let stopped = false;

  function time(ms) {
    return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function stop(title, text) {
    stopped = true;
    if (timer) clearTimeout(timer);
    $("title").textContent = title;
    $("summary").textContent = text;
    $("where").hidden = true;
    receipt("none");
    $("state").hidden = true;
  }

  function drawTrack(track, position) {
    const points = track.length ? track : [{ lat: position.lat, lon: position.lon }];
    let minLat = Infinity, maxLat = -Infinity, minLon = Infinity, maxLon = -Infinity;
    for (const p of points) {
      minLat = Math.min(minLat, p.lat); maxLat = Math.max(maxLat, p.lat);
      minLon = Math.min(minLon, p.lon); maxLon = Math.max(maxLon, p.lon);
    }
    // Degrees of longitude shrink with latitude; at least about 100 m across so one point is centred.
    const cos = Math.cos(((minLat + maxLat) / 2) * Math.PI / 180) || 1;
    const span = Math.max((maxLat - minLat), (maxLon - minLon) * cos, 0.001);
    const midLat = (minLat + maxLat) / 2, midLon = (minLon + maxLon) / 2;
    const scale = 160 / span;
    const xy = (p) => [150 + (p.lon - midLon) * cos * scale, 90 - (p.lat - midLat) * scale];
    $("track-line").setAttribute("points", points.map((p) => xy(p).map((v) => v.toFixed(1)).join(",")).join(" "));
    const now = xy(position);
    $("track-now").setAttribute("cx", now[0].toFixed(1));
    $("track-now").setAttribute("cy", now[1].toFixed(1));
  }

  function show(view) {
    const who = view.person || "The person you are a contact for";
    const what = KINDS[view.kind] || (view.kind || "an alert").replace(/_/g, " ");
    $("summary").textContent = (view.contact ? view.contact + ", " : "") + who + " needs help: " + what + ". Alert since " + time(view.opened_ms) + ".";
    const state = $("state");
    state.hidden = false;
    state.className = "state state-" + view.state;
    if (view.state === "closed") {
      $("title").textContent = "The alert is over";
      state.textContent = "Closed at " + time(view.closed_ms) + ": " + (OUTCOMES[view.outcome] || String(view.outcome).replace(/_/g, " ")) + ". Their position is no longer shared.";
      $("where").hidden = true;
      receipt("none");
      stopped = true;
      return;
    }
    $("title").textContent = view.confirmed ? "Receipt already confirmed" : "TrackMe alert";
    state.textContent = view.state === "acknowledged"
      ? (view.acknowledged_by === "contact" ? "Acknowledged by an emergency contact at " : "Acknowledged by the dispatcher at ") + time(view.acknowledged_ms) + ": help is being organised."
      : "Open: waiting for the dispatcher to acknowledge.";
    receipt(view.confirmed ? "confirmed" : "confirm");
    const p = view.position;
    if (p) {
      $("where").hidden = false;
      $("coordinates").textContent = p.lat.toFixed(5) + ", " + p.lon.toFixed(5);
      const age = Math.max(0, Math.round((view.now_ms - p.at_ms) / 1000));
      $("position-age").textContent = "(" + (age < 5 ? "just now" : age + " s ago") + ")";
      $("maps").href = "https://www.openstreetmap.org/?mlat=" + p.lat.toFixed(6) + "&mlon=" + p.lon.toFixed(6) + "#map=17/" + p.lat.toFixed(6) + "/" + p.lon.toFixed(6);
      drawTrack(view.track || [], p);
    } else {
      $("where").hidden = true;
    }
  }

  async function poll() {
    if (stopped) return;
    try {
      const response = await fetch(base + "/live", { cache: "no-store", credentials: "omit" });
      if (response.status === 403) return stop("This link is not valid.", "Check that the whole link was opened.");
      if (response.status === 410) {
        const body = await response.json().catch(() => ({}));
        const code = body.error && body.error.code;
        if (code === "alert_over") return stop("The alert is over", "This alert was closed; its position is no longer shared.");
        return stop("This link has expired.", "Call the emergency number if help is still needed.");
      }
      if (response.ok) {
        show(await response.json());
        $("updated").textContent = "Updated " + time(Date.now()) + (stopped ? "." : "; this page updates by itself.");
      } else {
        $("updated").textContent = "Could not update at " + time(Date.now()) + "; trying again.";
      }
    } catch (e) {
      $("updated").textContent = "No connection at " + time(Date.now()) + "; trying again.";
    }
    if (!stopped) timer = setTimeout(poll, POLL_MS);
  }

  // The receipt section holds the button while the contact can confirm, the thanks once they have.
  function receipt(kind) {
    const section = $("receipt");
    if (section.dataset.kind === kind) return;
    section.dataset.kind = kind;
    section.replaceChildren();
    if (kind === "confirm") {
      const p = document.createElement("p");
      p.textContent = "Let the dispatcher know you have this message:";
      const button = document.createElement("button");
      button.type = "button";
      button.id = "confirm";
      button.textContent = "I received this alert";
      button.addEventListener("click", confirm);
      section.append(p, button);
    } else if (kind === "confirmed") {
      const p = document.createElement("p");
      p.id = "confirmed";
      p.className = "done";
      p.textContent = "Your confirmation has been recorded; the dispatcher sees it.";
      section.append(p);
    }
  }

  async function confirm() {
    $("confirm").disabled = true;
    try {
      const response = await fetch(base, { method: "POST", credentials: "omit" });
      if (response.ok || response.status === 410) {
        receipt("confirmed");
        if (response.ok) $("title").textContent = "Thank you.";
        return;
      }
      $("updated").textContent = "The confirmation did not go through; try again.";
    } catch (e) {
      $("updated").textContent = "No connection; try again.";
    }
    $("confirm").disabled = false;
  }

  poll();
})();
