#!/usr/bin/env python3
"""An emergency contact follows an alert through their link, in a real browser: Debian's chromium
through chromium-driver, against a real trackme-server on loopback with a contact notifier, and a
device speaking the real HTTP API. The wearer presses SOS: the contact is told at once (the
default for the SOS button) with a link; on its page they see the position move as the device
sends new fixes, see that the dispatcher acknowledged, then see the alert close and the position
stop. Run by `make browser-tests`; screenshots go to simulations/out/browser/contact-*.png.

Usage: contact_test.py --server .build/debug/trackme-server [--out simulations/out/browser]
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import ADMIN, Device, Server, dispatcher_token, http  # noqa: E402
from webdriver import CheckRun, Chromium, wait_for  # noqa: E402

HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Ada <b>Lovelace</b>'


class ContactTest(CheckRun):
    def __init__(self, binary, out):
        self.binary = binary
        self.out = out
        self.workdir = tempfile.mkdtemp(prefix="trackme-contact-")
        self.results = []

    def shot(self, browser, name):
        browser.screenshot(os.path.join(self.out, f"contact-{name}.png"))

    def notifier_script(self):
        """The operator's notifier: writes each message (name, purpose, link) to a file the test reads."""
        self.messages = os.path.join(self.workdir, "contact-messages.txt")
        script = os.path.join(self.workdir, "notify-contact.sh")
        with open(script, "w") as f:
            f.write('#!/bin/sh\nprintf \'%s\\t%s\\t%s\\n\' "$TRACKME_CONTACT_NAME" "$TRACKME_PURPOSE" "$TRACKME_LINK" >> ' + self.messages + "\n")
        os.chmod(script, 0o755)
        return script

    def told(self):
        if not os.path.exists(self.messages):
            return []
        with open(self.messages) as f:
            return [line.rstrip("\n").split("\t") for line in f if line.strip()]

    def run(self):
        # The escalation schedule is far away: whatever reaches the contact here came at the raise.
        server = Server(self.binary, self.workdir, "--contact-notifier", self.notifier_script(),
                        "--contact-after-seconds", "3600", "--contact-repeat-seconds", "3600")
        browser = Chromium()
        try:
            self.flow(server, browser)
        finally:
            browser.quit()
            server.stop()
        return self.summary(self.out)

    def coordinates(self, browser):
        found = browser.find_all("#where")
        return browser.find("#coordinates").text if found and found[0].displayed() else ""

    def flow(self, server, browser):
        ada = Device(server, "pi-0001", {"name": HOSTILE_NAME, "age": 34, "contacts": [
            {"name": "Ben", "relation": "brother", "phone": "+39 555 0101"}]})
        state = {}

        def told_at_raise():
            ada.alert("alert-sos", 0, kind="manual", lat=45.46420, lon=9.19000)
            told = wait_for(lambda: self.told(), timeout=30, what="the notifier to run at the raise")
            assert [(name, purpose) for name, purpose, _ in told] == [("Ben", "raised")], told
            assert told[0][2].startswith(server.base + "/contact/"), told
            state["link"] = told[0][2]
        self.check("the wearer presses SOS: the contact is told at once, with their link", told_at_raise)

        def follows_position():
            browser.get(state["link"])
            wait_for(lambda: self.coordinates(browser) == "45.46420, 9.19000", what="the first position on the contact's page")
            page = browser.find("body").text
            assert HOSTILE_NAME in page, page
            assert browser.find_all("main b") == [] and browser.script("return window.__pwned === undefined"), "the name became markup"
            assert "Open: waiting for the dispatcher" in browser.find("#state").text, browser.find("#state").text
            maps = browser.find("#maps").attribute("href")
            assert "mlat=45.464200" in maps and "mlon=9.190000" in maps, maps
            assert browser.find("#track-now").attribute("cx") is not None
            self.shot(browser, "01-open")
            # The device sends new fixes at 1 Hz while the alert is open.
            for seq, lat in ((1, 45.46450), (2, 45.46480)):
                ada.alert("alert-sos", seq, kind="manual", kind_type="position", lat=lat, lon=9.19010)
            wait_for(lambda: self.coordinates(browser) == "45.46480, 9.19010", what="the page to follow the new fix by itself")
            points = browser.find("#track-line").attribute("points").split()
            assert len(points) == 3, points
        self.check("the contact opens the link and sees the position move as the device sends new fixes", follows_position)
        self.look(browser, "contact-open", "the contact's page of an open alert")

        def sees_acknowledged():
            status, _ = http(server.base, "POST", "/v1/alerts/alert-sos/ack", token=dispatcher_token(server))
            assert status == 200, status
            wait_for(lambda: "Acknowledged by the dispatcher" in browser.find("#state").text, what="the acknowledgement on the contact's page")
            assert self.coordinates(browser) == "45.46480, 9.19010", "still following while acknowledged"
            self.shot(browser, "02-acknowledged")
        self.check("the contact sees that the dispatcher acknowledged", sees_acknowledged)

        def sees_close():
            status, _ = http(server.base, "POST", "/v1/alerts/alert-sos/resolve", {"outcome": "help_arrived"}, token=dispatcher_token(server))
            assert status == 200, status
            wait_for(lambda: browser.find("#title").text == "The alert is over", what="the close on the contact's page")
            assert "help arrived" in browser.find("#state").text, browser.find("#state").text
            assert not browser.find("#where").displayed(), "no position once closed"
            # A fix the device still sends is not shown, and the link gives no position any more.
            ada.alert("alert-sos", 3, kind="manual", kind_type="position", lat=45.5, lon=9.2)
            path = state["link"][len(server.base):]
            status, live = http(server.base, "GET", path + "/live")
            assert status == 200 and live["state"] == "closed" and live.get("position") is None and live["track"] == [], live
            assert not browser.find("#where").displayed()
            self.shot(browser, "03-closed")
            wait_for(lambda: len(self.told()) == 2, timeout=30, what="the message that it closed")
            told = self.told()
            assert [(name, purpose) for name, purpose, _ in told] == [("Ben", "raised"), ("Ben", "closed")], told
        self.check("the contact sees the alert close; positions stop; the notifier tells them it closed", sees_close)
        self.look(browser, "contact-closed", "the contact's page of a closed alert")

        def forged():
            link = state["link"]
            browser.get(link[:-1] + ("0" if link[-1] != "0" else "1"))
            wait_for(lambda: "not valid" in browser.find("#title").text, what="the forged link refused")
            assert browser.find("#summary").text == "Check that the whole link was opened."
        self.check("a changed link shows that it is not valid, and nothing of the alert", forged)


if __name__ == "__main__":
    sys.exit(ContactTest.main())
