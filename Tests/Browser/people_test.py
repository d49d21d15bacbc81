#!/usr/bin/env python3
"""The people's page (/people, issue 20) in a real browser: Debian's chromium through
chromium-driver, against a real trackme-server on loopback. A wearer sees their own heart rate,
positions, daily statistics and alerts and downloads them; an organisation (with a hostile name)
asks for access; the wearer approves, the organisation reads, the wearer sees who read what and
revokes, and the organisation reads nothing more. Run by `make browser-tests`; screenshots go to
simulations/out/browser/people-*.png.

Usage: people_test.py --server .build/debug/trackme-server [--out simulations/out/browser]
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import ADMIN, Device, Server, TileServer, http  # noqa: E402
from webdriver import CheckRun, Chromium, wait_for  # noqa: E402

HOSTILE_ORG = '<img src=x onerror="window.__pwned=1">Acme <b>Research</b>'
PASSWORD = "correct horse battery"


class WearerDevice(Device):
    """A device that also sends position fixes."""

    def readings(self, items):
        self.batch_seq += 1
        readings = []
        for kind, value in items:
            self.reading_seq += 1
            reading = {"seq": self.reading_seq, "kind": kind, "t": self.stamp(self.reading_seq)}
            if kind == "hr":
                reading["hr"] = {"bpm": value, "contact": "detected", "rr": []}
            else:
                reading["fix"] = {"mode": 3, "lat": value[0], "lon": value[1]}
            readings.append(reading)
        body = {
            "version": 1, "device_id": self.id, "batch_seq": self.batch_seq, "idempotency_key": f"{self.id}:{self.batch_seq}",
            "dropped_by_budget": 0, "readings": readings,
        }
        status, ack = http(self.server.base, "POST", "/v1/batches", body, token=self.token, headers={"Idempotency-Key": body["idempotency_key"]})
        assert status == 200, (status, ack)

    def care_report(self, care_version, conflicts=None, overrides=None):
        """A batch whose heartbeat says which care settings the device runs, and what its own
        configuration overrides with which value, as the agent sends it."""
        self.batch_seq += 1
        heartbeat = {"strap": "connected", "gpsd": "fix", "store_depth": 0, "store_bytes": 4096, "care_version": care_version}
        if conflicts:
            heartbeat["care_conflicts"] = conflicts
        if overrides:
            heartbeat["care_overrides"] = overrides
        body = {
            "version": 1, "device_id": self.id, "batch_seq": self.batch_seq, "idempotency_key": f"{self.id}:{self.batch_seq}",
            "dropped_by_budget": 0, "heartbeat": heartbeat, "readings": [],
        }
        status, ack = http(self.server.base, "POST", "/v1/batches", body, token=self.token, headers={"Idempotency-Key": body["idempotency_key"]})
        assert status == 200, (status, ack)
        return ack


class PeopleTest(CheckRun):
    def __init__(self, binary, out):
        self.binary = binary
        self.out = out
        self.workdir = tempfile.mkdtemp(prefix="trackme-people-browser-")
        self.results = []

    def shot(self, browser, name):
        browser.screenshot(os.path.join(self.out, f"people-{name}.png"))

    def sign_in(self, browser, base, username):
        browser.get(base + "/people")
        wait_for(lambda: browser.find("#signin").displayed() or browser.find("#app").displayed(), what="the page")
        if browser.find("#app").displayed():
            browser.find("#signout").click()
            wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form after signing out")
        browser.find("#username").send_keys(username)
        browser.find("#password").send_keys(PASSWORD)
        browser.find("#signin-button").click()
        wait_for(lambda: browser.find("#app").displayed(), what=f"{username} signed in")

    def tab(self, browser, panel):
        browser.find(f'#tabs .tab[data-tab="{panel}"]').click()
        wait_for(lambda: browser.find(f"#{panel}").displayed(), what=f"the {panel} panel")

    def pwned(self, browser):
        return browser.script("return window.__pwned === undefined ? null : window.__pwned")

    def run(self):
        server = Server(self.binary, self.workdir)
        browser = Chromium()
        try:
            self.flow(server, browser)
        finally:
            browser.quit()
            server.stop()
        self.tiled()
        return self.summary(self.out)

    def tiled(self):
        """With map tiles (`--tile-url`): the wearer's track on a Leaflet map, Leaflet being the
        copy the server serves from Debian's libjs-leaflet."""
        if type(self) is not PeopleTest:
            return
        tiles = TileServer()
        server = Server(self.binary, self.workdir, "--tile-url", tiles.url)
        browser = Chromium()
        try:
            status, ada = http(server.base, "POST", "/v1/accounts",
                               {"username": "ada", "password": PASSWORD, "display_name": "Ada Lovelace", "role": "wearer"}, token=ADMIN)
            assert status == 201, (status, ada)
            device = WearerDevice(server, "pi-0001", {"name": "Ada Lovelace", "age": 70})
            status, body = http(server.base, "POST", f"/v1/people/{ada['id']}/devices", {"device_id": "pi-0001"}, token=ADMIN)
            assert status == 201, (status, body)
            device.readings([("hr", 64), ("fix", (45.4642, 9.19)), ("fix", (45.4650, 9.1910)), ("fix", (45.4661, 9.1925))])

            def track_on_tiles():
                self.sign_in(browser, server.base, "ada")
                wait_for(lambda: browser.find("#pos-summary").text.startswith("3 positions from "), what="the positions")
                wait_for(lambda: browser.find("#pos-map").displayed(), what="the map")
                assert not browser.find("#pos-box").displayed(), "the grid is not drawn under a map"
                wait_for(lambda: browser.script(
                    "return Array.from(document.querySelectorAll('#pos-map img.leaflet-tile')).filter((i) => i.complete && i.naturalWidth > 0).length") > 0,
                    what="map tiles from --tile-url under the track")
                assert tiles.requests, "no tile was asked for"
                assert browser.find_all("#pos-map path.track-line"), "no track on the map"
                assert browser.find_all("#pos-map path.track-last") and browser.find_all("#pos-map path.track-start")
                scripts = browser.script("return Array.from(document.scripts).map((s) => s.src)")
                assert any(src.endswith("/assets/leaflet/leaflet.js") for src in scripts), scripts
                assert "mlat=45.46610" in browser.find("#pos-open").attribute("href")
                self.shot(browser, "05-track-on-tiles")
            self.check("with --tile-url the wearer's track is on a Leaflet map (the server's Leaflet), with an 'Open in maps' link", track_on_tiles)
            self.look(browser, "people-wearer-map", "the wearer's track on map tiles")
        finally:
            browser.quit()
            server.stop()
            tiles.close()

    def flow(self, server, browser):
        status, ada = http(server.base, "POST", "/v1/accounts",
                           {"username": "ada", "password": PASSWORD, "display_name": "Ada Lovelace", "role": "wearer"}, token=ADMIN)
        assert status == 201, (status, ada)
        device = WearerDevice(server, "pi-0001", {"name": "Ada Lovelace", "age": 70})
        status, body = http(server.base, "POST", f"/v1/people/{ada['id']}/devices", {"device_id": "pi-0001"}, token=ADMIN)
        assert status == 201, (status, body)
        device.readings([("hr", 58), ("fix", (45.4642, 9.19)), ("hr", 64), ("fix", (45.4650, 9.1910)), ("hr", 190), ("hr", 72)])
        device.alert("alert-ada", 0)
        status, dispatcher = http(server.base, "POST", "/v1/dispatchers", {}, token=ADMIN)
        status, body = http(server.base, "POST", "/v1/alerts/alert-ada/resolve", {"outcome": "false_alarm"}, token=dispatcher["token"])
        assert status == 200, (status, body)
        status, body = http(server.base, "POST", "/v1/organisations",
                            {"username": "acme", "password": PASSWORD, "display_name": HOSTILE_ORG, "role": "third_party"})
        assert status == 201, (status, body)

        browser.get(server.base + "/people")
        wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form")
        self.look(browser, "people-signed-out", "the people's page signed out")

        def wearer_sees_data():
            self.sign_in(browser, server.base, "ada")
            assert browser.find("#whoami").text == "Ada Lovelace (wearer)", browser.find("#whoami").text
            wait_for(lambda: browser.find("#hr-summary").text.startswith("4 readings"), what="the heart-rate summary")
            wait_for(lambda: browser.find("#pos-summary").text.startswith("2 positions from "), what="the positions")
            assert len(browser.find_all("#pos-chart polyline.track")) == 1 and browser.find("#pos-chart text.north-label").text == "N"
            # Without tiles: the track on the scaled grid, and the last position in OpenStreetMap
            # as the console's card links it.
            assert not browser.find("#pos-map").displayed()
            assert len(browser.find_all("#pos-chart line.scale-bar")) == 1 and browser.find("#pos-chart path.north")
            assert "mlat=45.46500&mlon=9.19100" in browser.find("#pos-open").attribute("href"), browser.find("#pos-open").attribute("href")
            assert browser.find("#pos-open").text == "Open in maps"
            assert len(browser.find_all("#hr-chart path.data")) == 1
            rows = browser.find_all("#stats tr")
            assert len(rows) == 2, [r.text for r in rows]
            cells = [c.text for c in rows[1].find_all("td")]
            assert cells[1:5] == ["4", "58", "96", "190"], cells
            alerts = browser.find_all("#alerts tr")
            assert len(alerts) == 2 and "False alarm" in alerts[1].text, [a.text for a in alerts]
            # Kinds and outcomes in plain words, never the server's codes.
            assert "No pulse" in alerts[1].text and "no_pulse" not in alerts[1].text and "false_alarm" not in alerts[1].text, alerts[1].text
            self.shot(browser, "01-wearer")
        self.check("a wearer signs in and sees their heart rate, positions, daily statistics and alerts with outcomes", wearer_sees_data)

        def chart_reads():
            chart = browser.find("#hr-chart")
            assert chart.find("text.x-title").text.startswith("Time ("), chart.find("text.x-title").text
            assert chart.find("text.y-title").text == "Heart rate (bpm)"
            x_ticks = [t.text for t in chart.find_all("text.x-tick")]
            y_ticks = [t.text for t in chart.find_all("text.y-tick")]
            assert len(x_ticks) >= 2 and all(":" in t or " " in t for t in x_ticks), x_ticks
            assert len(y_ticks) >= 3 and all(t.isdigit() for t in y_ticks), y_ticks
            # Ada's limits (from her age, 70, with no care settings): drawn and labelled.
            profile = browser.async_script("const done = arguments[arguments.length - 1];"
                                           "fetch('/v1/people/me', {credentials: 'same-origin'}).then(r => r.json()).then(done);")
            low, high = profile["limits"]["min"], profile["limits"]["max"]
            assert chart.find("line.limit-low") and chart.find("line.limit-high")
            assert chart.find("text.limit-label-low").text == f"low limit {low} bpm"
            assert chart.find("text.limit-label-high").text == f"high limit {high} bpm"
            # The limit lines sit where the value axis puts those values.
            y_of = {t.text: float(t.attribute("y")) - 4 for t in chart.find_all("text.y-tick")}
            values = sorted(int(v) for v in y_of)
            per_bpm = (y_of[str(values[0])] - y_of[str(values[-1])]) / (values[-1] - values[0])
            expected = y_of[str(values[0])] - (high - values[0]) * per_bpm
            assert abs(float(chart.find("line.limit-high").attribute("y1")) - expected) < 1.5, (chart.find("line.limit-high").attribute("y1"), expected)
            # The alert's moment is marked, with its kind in words.
            marks = chart.find_all("g.alert-mark")
            assert len(marks) == 1, len(marks)
            assert marks[0].find("title").property("textContent").startswith("No pulse at "), marks[0].find("title").property("textContent")
            assert "UTC" not in browser.find("#alerts").text, "times are the reader's local time"
            assert chart.attribute("role") == "img" and browser.find("#hr-summary").text in browser.script(
                "const c = document.getElementById('hr-chart'); return c.getAttribute('aria-labelledby').split(' ').map((id) => document.getElementById(id).textContent).join(' ')")
        self.check("the wearer's heart-rate chart: time and bpm axes labelled, the limits drawn, the alert marked", chart_reads)

        def limits_in_force():
            # Care settings say 50 bpm low; the device's own configuration overrides it with 45:
            # the chart draws 45 as the limit in force and 50 as not in force, and says so.
            # Set by Ada herself (an admin's change would be a row in her access log).
            status = browser.async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/v1/session', {credentials: 'same-origin'}).then((r) => r.json()).then((session) => fetch('/v1/devices/pi-0001/care-settings', {"
                "method: 'PUT', credentials: 'same-origin', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token},"
                "body: JSON.stringify({min_hr: 50, max_hr: 150})})).then((r) => done(r.status), (e) => done('error ' + e));")
            assert status == 200, status
            device.care_report(None)
            device.care_report(1, ["heart_rate_low.threshold_bpm"], {"heart_rate_low.threshold_bpm": 45})
            browser.find("#span-show").click()
            chart = browser.find("#hr-chart")
            wait_for(lambda: "(the device's own" in chart.find("text.limit-label-low").text, what="the device's limit on the chart")
            assert chart.find("text.limit-label-low").text == "low limit 45 bpm (the device's own, in force)", chart.find("text.limit-label-low").text
            assert chart.find("text.limit-label-high").text == "high limit 150 bpm"
            assert chart.find("text.limit-label-overridden-low").text == "set here 50 bpm, not in force"
            assert not chart.find_all("line.limit-overridden-high")
            y_of = {t.text: float(t.attribute("y")) - 4 for t in chart.find_all("text.y-tick")}
            values = sorted(int(v) for v in y_of)
            per_bpm = (y_of[str(values[0])] - y_of[str(values[-1])]) / (values[-1] - values[0])
            for css, bpm in (("line.limit-low", 45), ("line.limit-overridden-low", 50)):
                expected = y_of[str(values[0])] - (bpm - values[0]) * per_bpm
                assert abs(float(chart.find(css).attribute("y1")) - expected) < 1.5, (css, chart.find(css).attribute("y1"), expected)
            summary = browser.find("#hr-summary").text
            assert "limits 45 (the device's own, in force over 50 set here) to 150 bpm" in summary, summary
            self.shot(browser, "01b-limits-in-force")
        self.check("the chart's limits are those in force on the device: its own override drawn and named, the one set here marked not in force", limits_in_force)
        self.look(browser, "people-wearer-data", "the wearer's data")

        def downloads():
            for link, check in (("#download-csv", "record,at_ms,at,device_id,bpm"), ("#download-json", '"heart_rate"'), ("#download-gpx", "<trkpt")):
                href = browser.find(link).attribute("href")
                assert "/v1/people/me/" in href, href
                text = browser.async_script(
                    "const done = arguments[arguments.length - 1];"
                    "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(done, e => done('error ' + e));", href)
                assert check in text, (link, text[:200])
        self.check("the downloads (JSON, CSV, GPX) hold the wearer's data", downloads)

        def organisation_asks():
            self.sign_in(browser, server.base, "acme")
            assert browser.find("#whoami").text.startswith(HOSTILE_ORG), browser.find("#whoami").text
            browser.find("#ask-person").send_keys("ada")
            browser.find("#ask-purpose").send_keys("sleep <b>study</b>")
            browser.find("#ask-button").click()
            wait_for(lambda: browser.find("#ask-message").text == "Request sent.", what="the request sent")
            wait_for(lambda: "pending" in browser.find("#org-request-list").text, what="the pending request")
            assert self.pwned(browser) is None
        self.check("an organisation with a hostile name asks for access", organisation_asks)
        self.look(browser, "people-organisation", "an organisation's requests")
        self.tab(browser, "org-groups")
        self.look(browser, "people-organisation-groups", "an organisation's group figures")

        def wearer_approves():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-requests")
            row = wait_for(lambda: next(iter(browser.find_all("#requests tr[data-request]")), None), what="the request")
            assert HOSTILE_ORG in row.text, row.text
            assert "sleep <b>study</b>" in row.text, row.text
            assert self.pwned(browser) is None, "a hostile name ran script"
            self.shot(browser, "02-request")
            row.find('button[data-action="approve"]').click()
            wait_for(lambda: "approved" in browser.find("#requests").text, what="approved")
        self.check("the wearer sees the request (the name as text) and approves it", wearer_approves)

        def organisation_reads():
            device.readings([("hr", 88), ("hr", 91)])
            self.sign_in(browser, server.base, "acme")
            wait_for(lambda: browser.find_all('#org-request-list button[data-action="read"]'), what="the Read button")
            browser.find('#org-request-list button[data-action="read"]').click()
            wait_for(lambda: browser.find("#org-read-summary").text == "2 heart-rate readings", what="the new readings only")
            # Positions and alerts were not approved: refused outright, not answered with empty lists.
            for kind in ("positions", "alerts"):
                got = browser.async_script(
                    "const done = arguments[arguments.length - 1];"
                    "fetch(arguments[0], {credentials: 'same-origin'}).then(r => done(r.status), e => done('error ' + e));",
                    f"/v1/people/{ada['id']}/{kind}?from=0")
                assert got == 403, (kind, got)
            self.shot(browser, "03-organisation-reads")
        self.check("the organisation reads the data approved, from the approval on", organisation_reads)

        def wearer_sees_log_and_revokes():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-requests")
            wait_for(lambda: HOSTILE_ORG in browser.find("#access-log").text, what="the organisation's read in the log")
            assert "you approved it" in browser.find("#access-log").text
            # Only the reads that returned data: the heart rate; the refused kinds left no row.
            whats = [row.find_all("td")[4].text for row in browser.find_all("#access-log tr")[1:]]
            assert whats and all(w.startswith("heart rate from ") for w in whats), whats
            assert "heart rate from " in browser.find("#access-log").text and "heart_rate" not in browser.find("#access-log").text
            assert self.pwned(browser) is None
            self.shot(browser, "04-access-log")
            browser.find('#requests button[data-action="revoke"]').click()
            wait_for(lambda: "revoked" in browser.find("#requests").text, what="revoked")
        self.check("the wearer sees who read what and when, and revokes", wearer_sees_log_and_revokes)
        self.look(browser, "people-wearer-access", "the wearer's requests and access log")

        def organisation_reads_nothing():
            self.sign_in(browser, server.base, "acme")
            wait_for(lambda: "revoked" in browser.find("#org-request-list").text, what="the revoked request")
            assert not browser.find_all('#org-request-list button[data-action="read"]')
            got = browser.async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch(arguments[0], {credentials: 'same-origin'}).then(r => done(r.status), e => done('error ' + e));",
                f"/v1/people/{ada['id']}/heart-rate?from=0")
            assert got == 403, got
        self.check("after revocation the organisation reads nothing", organisation_reads_nothing)


if __name__ == "__main__":
    sys.exit(PeopleTest.main())
