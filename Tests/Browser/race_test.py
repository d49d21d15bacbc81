#!/usr/bin/env python3
"""The spectator page of a run and the fleet page in a real browser (issue 21): Debian's chromium
through chromium-driver (Tests/Browser/webdriver.py), against a real trackme-server on loopback,
with runners' and taxis' devices speaking the real HTTP API (batches whose heartbeat carries the
profile, the run and the taxi state, as the agent sends them). Run by `make browser-tests`;
screenshots go to simulations/out/browser/.

Usage: race_test.py --server .build/debug/trackme-server [--out simulations/out/browser]
"""
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import ADMIN, Server, http  # noqa: E402
from webdriver import CheckRun, Chromium, wait_for  # noqa: E402

HOSTILE = '<img src=x onerror="window.__pwned=1">Eve <b>Runner</b>'
HIDDEN = "Hidden Nonconsenting"
START = (45.0, 7.0)
DEG_PER_M = 1 / (6371008.8 * 3.141592653589793 / 180)


def course_gpx():
    points = "".join(f'<trkpt lat="{START[0] + i * 100 * DEG_PER_M}" lon="{START[1]}"/>' for i in range(11))
    return f'<?xml version="1.0"?><gpx version="1.1"><trk><trkseg>{points}</trkseg></trk></gpx>'


class Device:
    """A runner's or a taxi's device over the HTTP API."""

    def __init__(self, server, device_id, name):
        status, body = http(server.base, "POST", "/v1/devices", {"device_id": device_id, "person": {"name": name, "age": 35}}, token=ADMIN)
        assert status == 201, (status, body)
        self.server, self.id, self.token, self.seq = server, device_id, body["token"], 0
        self.boot = str(uuid.uuid4())

    def report(self, lat, lon, heartbeat, at_ms=None, bpm=None):
        self.seq += 1
        beat = {"strap": "connected", "gpsd": "fix", "store_depth": 0, "store_bytes": 4096, **heartbeat}
        stamp = {"boot_id": self.boot, "mono_ns": self.seq * 10**9, "wall_ms": at_ms or int(time.time() * 1000), "wall_trusted": True}
        readings = [{"seq": self.seq * 2, "kind": "fix", "t": stamp, "fix": {"mode": 3, "lat": lat, "lon": lon}}]
        if bpm is not None:
            readings.append({"seq": self.seq * 2 + 1, "kind": "hr", "t": stamp, "hr": {"bpm": bpm, "contact": "detected", "rr": []}})
        body = {
            "version": 1, "device_id": self.id, "batch_seq": self.seq, "idempotency_key": f"{self.id}:{self.seq}", "dropped_by_budget": 0,
            "heartbeat": beat, "readings": readings,
        }
        status, ack = http(self.server.base, "POST", "/v1/batches", body, token=self.token, headers={"Idempotency-Key": body["idempotency_key"]})
        assert status == 200, (status, ack)
        return ack

    def run(self, code, metres, show, at_ms=None, health=False, checked_in=True, bpm=None):
        """A fix `metres` up the course, taken at `at_ms` (now if None), with a heart rate when
        `bpm` is given; `health` is the consent to let the organiser follow it. Distances are
        counted along each runner's own fixes, so a runner's track starts at the start line."""
        run = {"code": code, "show": show, "health": health, "checked_in_ms": int(time.time() * 1000) - 180000 if checked_in else None}
        self.report(START[0] + metres * DEG_PER_M, START[1], {"profile": "runner", "run": run}, at_ms, bpm)

    def taxi(self, state, lat, lon):
        """Reports as a taxi; returns the ride offer or ride its batch reply carries, or None."""
        return (self.report(lat, lon, {"profile": "taxi", "taxi_state": state}).get("orders") or {}).get("ride")

    def answer(self, offer_id, event):
        status, body = http(self.server.base, "POST", "/v1/fleet/ride-answers", {"offer_id": offer_id, "event": event}, token=self.token)
        assert status == 200, (status, body)


class RaceTest(CheckRun):
    def __init__(self, binary, out):
        self.binary, self.out = binary, out
        self.workdir = tempfile.mkdtemp(prefix="trackme-race-browser-")
        self.results = []

    def shot(self, browser, name):
        browser.screenshot(os.path.join(self.out, f"{name}.png"))

    def spectator_flow(self, server, browser):
        start = int(time.time() * 1000) - 120000
        status, run = http(server.base, "POST", "/v1/runs", {"name": "City <1K> & friends", "start_ms": start, "code": "CITY-1K", "gpx": course_gpx()}, token=ADMIN)
        assert status == 201, (status, run)
        assert http(server.base, "POST", f"/v1/runs/{run['id']}/enrolment", {"open": True}, token=ADMIN)[0] == 200
        ann, eve, hid = Device(server, "r-ann", "Ann Runner"), Device(server, "r-eve", HOSTILE), Device(server, "r-hid", HIDDEN)
        for device, metres, seconds, show in ((ann, 300, 30, True), (eve, 500, 60, True), (hid, 900, 100, False)):
            device.run("CITY-1K", 0, show, at_ms=start)
            device.run("CITY-1K", metres, show, at_ms=start + seconds * 1000)

        def page_shows_consenting_only():
            browser.get(server.base + run["spectator_url"])
            wait_for(lambda: len(browser.find_all("#standings tbody tr")) == 2, timeout=15, what="two runners on the standings")
            names = [row.find("td.name").text for row in browser.find_all("#standings tbody tr")]
            assert names == [HOSTILE, "Ann Runner"], names
            assert browser.find("#run-name").text == "City <1K> & friends"
            assert browser.find("#leader").text.startswith("Leader: " + HOSTILE), browser.find("#leader").text
            assert len(browser.find_all("svg.grid-map circle.runner")) == 2
            # Their last fixes are a minute old and more: shown as such, not as standing still.
            times = [row.find("td.time").text for row in browser.find_all("#standings tbody tr")]
            assert all(t.startswith("no fix for ") for t in times), times
            assert len(browser.find_all("#standings tr.stale")) == 2
            assert len(browser.find_all("svg.grid-map circle.runner.stale")) == 2
            source = browser.script("return document.documentElement.outerHTML")
            assert HIDDEN not in source, "a runner who did not consent is on the page"
            assert browser.script("return window.__pwned === undefined"), "a runner's name ran as markup"
            assert not browser.find_all("#standings img"), "a runner's name became an element"
            # The data the page fetched holds no one else either.
            data = browser.async_script("fetch(arguments[0]).then(r => r.text()).then(arguments[arguments.length - 1])", f"/v1/public/runs/{run['id']}")
            assert HIDDEN not in data and "r-hid" not in data and "r-ann" not in data, data
            seen = [row.find("td.seen").text for row in browser.find_all("#standings tbody tr")]
            assert all(s.endswith(" s ago") or s.endswith(" min ago") for s in seen), seen
            self.shot(browser, "race-01-spectators")
        self.check("spectators see only consenting runners, names as text, the leader first", page_shows_consenting_only)

        def map_first():
            browser.viewport(1366, 768)
            try:
                browser.settle()
                box = browser.script("const r = document.getElementById('map').getBoundingClientRect();"
                                     "return {top: r.top, bottom: r.bottom, left: r.left, width: r.width, height: r.height};")
                assert box["top"] < 120 and box["bottom"] <= 768 and box["height"] >= 400 and box["width"] >= 600, box
                dots = browser.script("return Array.from(document.querySelectorAll('svg.grid-map circle.runner')).map((c) => c.getBoundingClientRect().bottom)")
                assert dots and all(0 < y <= 768 for y in dots), dots
            finally:
                browser.reset_viewport()
        self.check("the race map is in the first screen at 1366x768, the runners on it", map_first)

        def search_finds_runner():
            field = browser.find("#runner-search")
            field.send_keys("ann")
            wait_for(lambda: [r.find("td.name").text for r in browser.find_all("#standings tbody tr") if r.displayed()] == ["Ann Runner"], what="Ann alone in the standings")
            assert browser.find("#search-count").text == "1 of 2 runners match", browser.find("#search-count").text
            found = browser.find_all("svg.grid-map circle.runner.found")
            assert len(found) == 1 and found[0].attribute("data-runner") == browser.find('#standings tbody tr:not([hidden])').attribute("data-runner")
            field.clear()
            browser.script("document.getElementById('runner-search').dispatchEvent(new Event('input')); return true;")
            wait_for(lambda: all(r.displayed() for r in browser.find_all("#standings tbody tr")), what="every runner again")
        self.check("a runner is found by search, in the standings and on the map", search_finds_runner)
        self.look(browser, "race", "the race page (no account)")

        def live_update():
            # The rows are updated in place: the very same elements after the next reads.
            browser.script("window.__rows = Array.from(document.querySelectorAll('#standings tbody tr')); return true;")
            ann.run("CITY-1K", 800, True)
            wait_for(lambda: browser.find_all("#standings tbody tr")[0].find("td.name").text == "Ann Runner", timeout=5, what="Ann takes the lead on the page")
            assert browser.find("#leader").text.startswith("Leader: Ann Runner")
            assert browser.find_all("#standings tbody tr")[0].find("td.time").text == "", "a fresh fix is not stale"
            assert browser.script("return Array.from(document.querySelectorAll('#standings tbody tr')).every((r) => window.__rows.includes(r))"), "rows were rebuilt"
            assert not browser.find_all("#standings tbody tr")[0].attribute("class") or "stale" not in browser.find_all("#standings tbody tr")[0].attribute("class")
            # Eve withdraws consent: gone from the page at her next report.
            eve.run("CITY-1K", 600, False)
            wait_for(lambda: len(browser.find_all("#standings tbody tr")) == 1, timeout=5, what="Eve gone after withdrawing consent")
            assert "Eve" not in browser.script("return document.documentElement.outerHTML")
            self.shot(browser, "race-02-leader-changed")
        self.check("the page follows the race live; a withdrawn consent removes the runner", live_update)

    def organiser_flow(self, server, browser):
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "olga", "password": "correct horse battery", "role": "organiser", "display_name": "Olga Organiser"}, token=ADMIN)
        assert status == 201
        gpx = os.path.join(self.workdir, "lakeside.gpx")
        with open(gpx, "w", encoding="utf-8") as f:
            f.write(course_gpx())
        name = "Lakeside <10K> & co"
        ann, bob, cat = Device(server, "o-ann", "Ann Consenting"), Device(server, "o-bob", "Bob Private"), Device(server, "o-cat", "Cat Absent")

        def create_from_gpx():
            browser.get(server.base + "/organise")
            wait_for(lambda: browser.find("#signin").displayed(), what="the organiser's sign-in form")
            browser.find("#username").send_keys("olga")
            browser.find("#password").send_keys("correct horse battery")
            browser.find("#signin-button").click()
            wait_for(lambda: browser.find("#desk").displayed(), what="the organiser's desk")
            browser.find("#run-name").send_keys(name)
            browser.find("#run-place").send_keys("Lago Maggiore")
            browser.script("const d = new Date(Date.now() - 120000); const p = (n) => String(n).padStart(2, '0');"
                           "document.getElementById('run-start').value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()); return true;")
            browser.find("#run-cap").send_keys("10")
            browser.find("#run-code").send_keys("LAKE-10K")
            browser.find("#run-gpx").send_keys(gpx)
            browser.find("#create-button").click()
            wait_for(lambda: browser.find("#run-title").text == name, timeout=10, what="the new run opened")
            assert "code LAKE-10K" in browser.find("#run-facts").text and "1.00 km" in browser.find("#run-facts").text, browser.find("#run-facts").text
            assert "Lago Maggiore" in browser.find("#run-facts").text
            browser.find("#enrolment-button").click()
            wait_for(lambda: browser.find("#enrolment-button").text == "Close enrolment", what="enrolment open")
            self.shot(browser, "organise-01-created")
        self.check("the organiser signs in and creates a run from a GPX file, then opens enrolment", create_from_gpx)

        def enrol_and_check_in():
            # The first fixes a minute and a half after the gun; the next ones now: a runner's pace.
            early = int(time.time() * 1000) - 90000
            ann.run("LAKE-10K", 0, True, at_ms=early, health=True, bpm=120)
            bob.run("LAKE-10K", 0, True, at_ms=early, health=False, bpm=121)
            cat.run("LAKE-10K", 0, True, checked_in=False)
            wait_for(lambda: len(browser.find_all("#entries tbody tr")) == 3, timeout=10, what="three runners enrolled")
            rows = {r.attribute("data-device"): r for r in browser.find_all("#entries tbody tr")}
            assert rows["o-cat"].find("td.checked-in").text == "no"
            assert rows["o-ann"].find("td.checked-in").text != "no"
            removable = [r.attribute("data-device") for r in browser.find_all("#entries tbody tr") if r.find_all("button")]
            assert removable == ["o-cat"], removable
            rows["o-cat"].find("button").click()
            wait_for(lambda: len(browser.find_all("#entries tbody tr")) == 2, timeout=10, what="Cat removed")
            cat.run("LAKE-10K", 50, True, checked_in=False)
            assert "o-cat" not in [r.attribute("data-device") for r in browser.find_all("#entries tbody tr")]
        self.check("runners enrol with and without health consent; the one who did not check in is removed", enrol_and_check_in)

        def follow_live():
            ann.run("LAKE-10K", 400, True, health=True, bpm=162)
            bob.run("LAKE-10K", 300, True, health=False, bpm=171)

            def health():
                return {r.attribute("data-device"): r.find("td.health").text for r in browser.find_all("#entries tbody tr")}
            wait_for(lambda: health().get("o-ann") == "162 bpm", timeout=10, what="Ann's heart rate on the organiser's page")
            assert health()["o-bob"] == "not shared", health()
            assert "171" not in browser.script("return document.documentElement.outerHTML"), "Bob's heart rate reached the page"
            names = [r.find("td.name").text for r in browser.find_all("#entries tbody tr")]
            assert names == ["Ann Consenting", "Bob Private"], names
            self.shot(browser, "organise-02-live")
        self.check("the organiser follows live: heart rate for the consenting runner only", follow_live)
        self.look(browser, "organise", "the organiser's page following a run")

        def close_with_standings():
            browser.find("#close-button").click()
            wait_for(lambda: browser.find("#run-message").text == "Closed: final standings", timeout=10, what="the run closed")
            rows = browser.find_all("#entries tbody tr")
            assert [r.find("td.name").text for r in rows] == ["Ann Consenting", "Bob Private"]
            first = rows[0]
            assert first.find("td.km").text == "0.40", first.find("td.km").text
            assert first.find("td.time").text and first.find("td.pace").text, (first.find("td.time").text, first.find("td.pace").text)
            assert browser.find("#close-button").property("disabled")
            assert all(r.find("td.health").text != "162 bpm" for r in rows), "health shown after the run"
            self.shot(browser, "organise-03-closed")
        self.check("the organiser closes the run: final standings with time, distance and pace", close_with_standings)

        def public_list():
            browser.get(server.base + "/runs")
            wait_for(lambda: len(browser.find_all("#runs tbody tr")) >= 2, what="the runs listed")
            for query in ("maggiore", "LAKESIDE"):
                field = browser.find("#run-search")
                field.clear()
                field.send_keys(query)
                browser.find("#find-form button").click()
                wait_for(lambda: [r.find("td a").text for r in browser.find_all("#runs tbody tr")] == [name], timeout=5, what=f"the run found by {query}")
            row = browser.find("#runs tbody tr")
            assert row.find("td.run-status").text == "Finished", row.find("td.run-status").text
            assert browser.script("return window.__pwned === undefined")
            self.shot(browser, "runs-01-found")
            row.find("td a").click()
            wait_for(lambda: browser.find("#run-status").text == "finished: final standings", timeout=10, what="the closed run's page")
            assert [r.find("td.name").text for r in browser.find_all("#standings tbody tr")] == ["Ann Consenting", "Bob Private"]
            assert not browser.find_all("svg.grid-map circle.runner"), "positions shown after the run"
        self.check("the public list finds the run by place and by name; its page has standings and no positions", public_list)
        browser.get(server.base + "/runs?q=maggiore")
        wait_for(lambda: len(browser.find_all("#runs tbody tr")) == 1, what="the list for the look")
        self.look(browser, "runs", "the public list of runs")
        browser.get(server.base + "/organise")
        wait_for(lambda: browser.find("#sign-out").displayed(), what="the sign-out button")
        browser.find("#sign-out").click()
        wait_for(lambda: not any(c["name"] == "trackme_session" for c in browser.cookies()), what="signed out")

    def paging_flow(self, server, browser):
        """Lists longer than a page: the public list shows its first page and "More runs" adds
        the next; the organiser turns the pages of a field of 101 runners."""
        for n in range(101):
            status, body = http(server.base, "POST", "/v1/runs", {"name": f"Series race {n:03d}", "place": "Series Park", "start_ms": int(time.time() * 1000) + 86400000 + n * 60000, "code": f"SERIES-{n:03d}", "gpx": course_gpx()}, token=ADMIN)
            assert status == 201, (status, body)

        def more_runs():
            browser.get(server.base + "/runs?q=series")
            wait_for(lambda: len(browser.find_all("#runs tbody tr")) == 100, timeout=10, what="the first page of the series")
            assert browser.find("#more-runs").displayed()
            names = [r.find("td a").text for r in browser.find_all("#runs tbody tr")]
            assert names[0] == "Series race 100" and names[-1] == "Series race 001", (names[0], names[-1])
            browser.find("#more-runs").click()
            wait_for(lambda: len(browser.find_all("#runs tbody tr")) == 101, timeout=10, what="the next page added")
            assert browser.find_all("#runs tbody tr")[-1].find("td a").text == "Series race 000"
            assert not browser.find("#more-runs").displayed()
            assert browser.find("#count").text == "101 runs matching “series”", browser.find("#count").text
        self.check("the public list shows a page of runs and More runs adds the next one", more_runs)

        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "paula", "password": "correct horse battery", "role": "organiser"}, token=ADMIN)
        assert status == 201

        def turn_pages():
            browser.get(server.base + "/organise")
            wait_for(lambda: browser.find("#signin").displayed(), what="the organiser's sign-in form")
            browser.find("#username").send_keys("paula")
            browser.find("#password").send_keys("correct horse battery")
            browser.find("#signin-button").click()
            wait_for(lambda: browser.find("#desk").displayed(), what="the organiser's desk")
            # The run and its enrolment as the page would make them, with the session's CSRF token.
            made = browser.async_script(
                "const done = arguments[arguments.length - 1];"
                "(async () => {"
                "  const session = await (await fetch('/v1/session')).json();"
                "  const headers = { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token };"
                "  const run = await (await fetch('/v1/runs', { method: 'POST', headers, body: JSON.stringify({ name: 'Big field', start_ms: Date.now() - 120000, code: 'BIG-FIELD', gpx: arguments[0] }) })).json();"
                "  await fetch('/v1/runs/' + run.id + '/enrolment', { method: 'POST', headers, body: JSON.stringify({ open: true }) });"
                "  return run.id;"
                "})().then(done, (e) => done('failed: ' + e));", course_gpx())
            assert not made.startswith("failed"), made
            early = int(time.time() * 1000) - 90000
            for n in range(101):
                Device(server, f"big-{n:03d}", f"Runner {n:03d}").run("BIG-FIELD", 0, True, at_ms=early)
            browser.get(server.base + "/organise")
            wait_for(lambda: len(browser.find_all("#my-runs tbody tr")) == 1, timeout=10, what="Paula's run listed")
            browser.find("#my-runs tbody tr button").click()
            wait_for(lambda: len(browser.find_all("#entries tbody tr")) == 100, timeout=10, what="the first page of runners")
            assert "101 runners" in browser.find("#run-facts").text, browser.find("#run-facts").text
            assert browser.find("#entries-next").displayed() and not browser.find("#entries-previous").displayed()
            browser.find("#entries-next").click()
            wait_for(lambda: len(browser.find_all("#entries tbody tr")) == 1, timeout=10, what="the last runner on the next page")
            assert browser.find("#entries tbody tr td.rank").text == "101"
            assert not browser.find("#entries-next").displayed()
            browser.find("#entries-previous").click()
            wait_for(lambda: len(browser.find_all("#entries tbody tr")) == 100, timeout=10, what="back to the leaders")
            assert browser.find("#entries tbody tr td.rank").text == "1"
            self.shot(browser, "organise-04-pages")
        self.check("the organiser turns the pages of a field larger than a page, ranked across them", turn_pages)
        browser.find("#sign-out").click()
        wait_for(lambda: not any(c["name"] == "trackme_session" for c in browser.cookies()), what="signed out")

    def fleet_flow(self, server, browser):
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "fred", "password": "correct horse battery", "role": "fleet_operator"}, token=ADMIN)
        assert status == 201
        status, zone = http(server.base, "POST", "/v1/fleet/zones", {"name": "Centre <main>", "polygon": [[45.0, 7.0], [45.0, 7.01], [45.01, 7.01], [45.01, 7.0]]}, token=ADMIN)
        assert status == 201, zone
        first, second, riding = Device(server, "taxi-1", "Cab One"), Device(server, "taxi-2", HOSTILE), Device(server, "taxi-3", "Cab Three")
        second.taxi("available", 45.005, 7.005)
        # taxi-2 is queued when its batch is stored (fsynced) and answered, before taxi-1's is sent.
        first.taxi("available", 45.006, 7.004)
        riding.taxi("on_ride", 45.004, 7.006)

        def signed_out():
            browser.get(server.base + "/fleet")
            wait_for(lambda: browser.find("#signin-needed").displayed(), what="the sign-in hint")
        self.check("the fleet page without a session asks to sign in", signed_out)
        self.look(browser, "fleet-signed-out", "the fleet page signed out")

        def fleet_page():
            browser.get(server.base + "/")
            wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form")
            browser.find("#username").send_keys("fred")
            browser.find("#password").send_keys("correct horse battery")
            browser.find("#signin-button").click()
            wait_for(lambda: any(c["name"] == "trackme_session" for c in browser.cookies()), what="the session cookie")
            # A fleet operator lands on the fleet page, not on the dispatchers' console.
            wait_for(lambda: browser.url == server.base + "/fleet", what="the fleet page after sign-in")
            wait_for(lambda: len(browser.find_all("ol.queue li")) == 2, timeout=10, what="two taxis queued")
            queue = [li.attribute("data-device") for li in browser.find_all("ol.queue li")]
            assert queue == ["taxi-2", "taxi-1"], queue
            assert browser.find("section.zone h2").text == "Centre <main>"
            assert browser.find("ol.queue li").text.startswith(HOSTILE)
            # Each queued taxi says how old its last report is and how old its position is.
            ages = [age.text.lstrip(" ·") for age in browser.find_all("ol.queue li .last-report")]
            assert sorted(a.split(" ")[0] for a in ages) == ["last", "last", "position", "position"], ages
            assert all(a.endswith(" s ago") for a in ages), ages
            others = [(li.attribute("data-device"), li.attribute("data-state")) for li in browser.find_all("ul.others li")]
            assert others == [("taxi-3", "on_ride")], others
            assert browser.script("return window.__pwned === undefined")
            self.shot(browser, "fleet-01-queue")
            # taxi-2 takes a ride: out of the queue at the next refresh.
            second.taxi("on_ride", 45.005, 7.005)
            wait_for(lambda: [li.attribute("data-device") for li in browser.find_all("ol.queue li")] == ["taxi-1"], timeout=6, what="the queue after a ride starts")
            self.shot(browser, "fleet-02-ride")
        self.check("the fleet page: the zone's queue in arrival order, states, names as text", fleet_page)

        def rides():
            def state(ride_id):
                rows = [tr for tr in browser.find_all("#rides tbody tr") if tr.attribute("data-ride") == ride_id]
                return rows[0].attribute("data-state") if rows else None
            status, ride = http(server.base, "POST", "/v1/fleet/rides", {"zone_id": zone["id"], "pickup": "Via Po 1"}, token=ADMIN)
            assert status == 201 and ride["state"] == "offered", (status, ride)
            wait_for(lambda: state(ride["id"]) == "offered", timeout=6, what="the ride offered")
            offer = first.taxi("available", 45.006, 7.004)
            assert offer and offer["stage"] == "offered", offer
            first.answer(offer["offer_id"], "accept")
            wait_for(lambda: state(ride["id"]) == "accepted", timeout=6, what="the ride accepted")
            first.answer(offer["offer_id"], "pickup")
            wait_for(lambda: state(ride["id"]) == "on_ride", timeout=6, what="the ride under way")
            self.shot(browser, "fleet-03-on-ride")
            first.answer(offer["offer_id"], "complete")
            wait_for(lambda: state(ride["id"]) == "completed", timeout=6, what="the ride completed")
            assert "1 completed" in browser.find("#ride-counts").text, browser.find("#ride-counts").text
            self.shot(browser, "fleet-04-completed")
        self.check("the fleet page shows a ride offered, accepted, on the ride and completed", rides)
        self.look(browser, "fleet", "the fleet page as a fleet operator")

    def run(self):
        server = Server(self.binary, self.workdir)
        browser = Chromium()
        try:
            self.spectator_flow(server, browser)
            self.organiser_flow(server, browser)
            self.paging_flow(server, browser)
            self.fleet_flow(server, browser)
        finally:
            browser.quit()
            server.stop()
        return self.summary(self.out)


if __name__ == "__main__":
    sys.exit(RaceTest.main())
