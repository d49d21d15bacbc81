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
from console_test import ADMIN, Device, Server, http  # noqa: E402
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
        return self.summary(self.out)

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

        def wearer_sees_data():
            self.sign_in(browser, server.base, "ada")
            assert browser.find("#whoami").text == "Ada Lovelace (wearer)", browser.find("#whoami").text
            wait_for(lambda: browser.find("#hr-summary").text.startswith("4 readings"), what="the heart-rate summary")
            wait_for(lambda: browser.find("#pos-summary").text == "2 positions", what="the positions")
            assert len(browser.find_all("#hr-chart polyline")) == 1
            rows = browser.find_all("#stats tr")
            assert len(rows) == 2, [r.text for r in rows]
            cells = [c.text for c in rows[1].find_all("td")]
            assert cells[1:5] == ["4", "58", "96", "190"], cells
            alerts = browser.find_all("#alerts tr")
            assert len(alerts) == 2 and "false alarm" in alerts[1].text, [a.text for a in alerts]
            self.shot(browser, "01-wearer")
        self.check("a wearer signs in and sees their heart rate, positions, daily statistics and alerts with outcomes", wearer_sees_data)

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
            self.shot(browser, "03-organisation-reads")
        self.check("the organisation reads the data approved, from the approval on", organisation_reads)

        def wearer_sees_log_and_revokes():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-requests")
            wait_for(lambda: HOSTILE_ORG in browser.find("#access-log").text, what="the organisation's read in the log")
            assert "consent" in browser.find("#access-log").text
            assert "heart_rate" in browser.find("#access-log").text
            assert self.pwned(browser) is None
            self.shot(browser, "04-access-log")
            browser.find('#requests button[data-action="revoke"]').click()
            wait_for(lambda: "revoked" in browser.find("#requests").text, what="revoked")
        self.check("the wearer sees who read what and when, and revokes", wearer_sees_log_and_revokes)

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
