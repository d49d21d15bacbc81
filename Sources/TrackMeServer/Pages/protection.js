// The wearer's protection state in words, shared by the console's device list and alert card
// and the carer's page, so that a dispatcher and a carer read the same thing: what leaves the
// wearer less protected than one would assume, from the device's last heartbeat (a paused
// watch, a store that loses everything on restart, readings that failed their check, batteries
// running down) and the care switches (AutomatedSOS off, discreet SOS), each with how long.
'use strict';
const Protection = (() => {
  function ago(ms) {
    if (ms === null || ms === undefined) return 'never';
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 90) return s + ' s ago';
    if (s < 5400) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }
  // How long a condition has held: the device's count at its last heartbeat (its own monotonic
  // clock) plus the time since the server had that heartbeat.
  function lasting(hb, condition, seenMs) {
    const held = hb.conditions_for_s && hb.conditions_for_s[condition];
    if (held === undefined || held === null || !seenMs) return '';
    const s = held + Math.max(0, Math.round((Date.now() - seenMs) / 1000));
    return ' for ' + (s < 90 ? s + ' s' : s < 5400 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h');
  }
  function problems(hb, seenMs) {
    const found = [];
    if (hb.monitoring_paused) found.push('monitoring paused' + lasting(hb, 'monitoring_paused', seenMs));
    if (hb.store_state === 'memory_only') found.push('store in memory only' + lasting(hb, 'store_memory_only', seenMs));
    if (hb.store_problem) found.push('store: ' + hb.store_problem);
    if (hb.quarantined) found.push(hb.quarantined + ' damaged readings set aside' + lasting(hb, 'quarantined', seenMs));
    if (hb.battery_low) found.push('strap battery low' + lasting(hb, 'strap_battery_low', seenMs));
    if (hb.device_power_level === 'critical') found.push('device battery critical: monitoring will stop' + lasting(hb, 'device_battery_low', seenMs));
    else if (hb.device_power_level === 'low') found.push('device battery low' + lasting(hb, 'device_battery_low', seenMs));
    if (hb.device_power === 'charging') found.push('charging' + lasting(hb, 'charging', seenMs));
    return found;
  }
  // AutomatedSOS, the service the person is enrolled in: off, the rules' alerts reach no
  // dispatcher and the device calls nobody for them (the SOS button still does).
  function automatedSOS(person) {
    const s = person && person.automated_sos;
    if (!s) return null;
    return s.active ? null : 'AutomatedSOS off' + (s.changed_ms ? ' (switched ' + ago(s.changed_ms) + ')' : '');
  }
  // The care setting discreet_sos: the wearer is shown nothing of any alert (a wearer under threat).
  function discreet(person) {
    return person && person.discreet_sos ? 'discreet SOS: the device shows nothing of alerts' : null;
  }
  // Every badge of one device, as [text, extra class] pairs: silent first, then the heartbeat's
  // conditions, then the care switches; none when the wearer is as protected as assumed.
  function badges(device) {
    const hb = device.heartbeat || {};
    const found = [];
    if (device.silent) found.push(['SILENT', '']);
    for (const p of problems(hb, device.last_seen_ms)) found.push([p, 'protection']);
    if (automatedSOS(device.person)) found.push([automatedSOS(device.person), 'protection automated-sos-off']);
    if (discreet(device.person)) found.push([discreet(device.person), 'protection discreet-sos']);
    return found;
  }
  return { ago, lasting, problems, automatedSOS, discreet, badges };
})();
