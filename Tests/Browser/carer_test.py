#!/usr/bin/env python3
"""Care settings and carers on the people's page (/people, issue 20) in a real browser: Debian's
chromium through chromium-driver, against a real trackme-server on loopback. The wearer sets a
threshold, a rule switch and a contact through the form and sees the version on the server, then
the version the device reports and the conflict of a local override on the device; the wearer
names a carer (with a hostile display name, shown as text); the carer signs in, sees the person,
changes a threshold, and is refused a download the wearer did not allow; the wearer sees the
carer's reads and change in the access log and removes the carer, who then sees nothing. Run by
`make browser-tests`; screenshots go to simulations/out/browser/carer-*.png.

Usage: carer_test.py --server .build/debug/trackme-server [--out simulations/out/browser]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import ADMIN, http  # noqa: E402
from people_test import PASSWORD, PeopleTest, WearerDevice  # noqa: E402
from webdriver import wait_for  # noqa: E402

HOSTILE_CARER = '<img src=x onerror="window.__pwned=1">Cara <b>Carer</b>'
FORM = '.care-device[data-device="pi-0001"]'


class CarerTest(PeopleTest):
    def shot(self, browser, name):
        browser.screenshot(os.path.join(self.out, f"carer-{name}.png"))

    def fetch_status(self, browser, method, path):
        return browser.async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[1], {method: arguments[0], credentials: 'same-origin'}).then(r => done(r.status), e => done('error ' + e));",
            method, path)

    @staticmethod
    def set_number(form, css, value):
        field = form.find(css)
        field.clear()
        field.send_keys(str(value))

    def flow(self, server, browser):
        status, ada = http(server.base, "POST", "/v1/accounts",
                           {"username": "ada", "password": PASSWORD, "display_name": "Ada Lovelace", "role": "wearer"}, token=ADMIN)
        assert status == 201, (status, ada)
        device = WearerDevice(server, "pi-0001", {"name": "Ada Lovelace", "age": 70})
        status, body = http(server.base, "POST", f"/v1/people/{ada['id']}/devices", {"device_id": "pi-0001"}, token=ADMIN)
        assert status == 201, (status, body)
        device.readings([("hr", 64), ("hr", 66)])
        status, cara = http(server.base, "POST", "/v1/accounts",
                            {"username": "cara", "password": PASSWORD, "display_name": HOSTILE_CARER, "role": "carer"}, token=ADMIN)
        assert status == 201, (status, cara)

        def wearer_sets_threshold():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-care")
            form = wait_for(lambda: next(iter(browser.find_all(FORM)), None), what="the care form of pi-0001")
            wait_for(lambda: "Nothing set on the server" in form.find(".care-server-version").text, what="no settings yet")
            self.set_number(form, ".care-min", 45)
            form.find('.care-rule[data-rule="contact_lost"]').click()
            assert form.find('.care-rule[data-rule="manual"]').property("disabled") is True
            form.find(".care-contacts").send_keys("Yorick <b>Q</b>; son; +44 7700 900123")
            form.find(".care-save").click()
            wait_for(lambda: browser.find(FORM + " .care-message").text.startswith("Saved version 1"), what="saved version 1")
            assert "version 1, set by Ada Lovelace" in browser.find(FORM + " .care-server-version").text, browser.find(FORM + " .care-server-version").text
            running = browser.find(FORM + " .care-device-version")
            assert "not reported" in running.text and "care-pending" in running.attribute("class"), running.text
            status, view = http(server.base, "GET", "/v1/devices/pi-0001/care-settings", token=ADMIN)
            assert status == 200, (status, view)
            settings = view["settings"]
            assert settings["version"] == 1 and settings["min_hr"] == 45, settings
            assert settings["rules"]["contact_lost"] is False and settings["rules"]["no_pulse"] is True, settings
            assert settings["contacts"] == [{"name": "Yorick <b>Q</b>", "relation": "son", "phone": "+44 7700 900123"}], settings
            self.shot(browser, "01-wearer-saved")
        self.check("the wearer sets a threshold, a rule switch and a contact through the form; the page shows version 1 on the server, not yet on the device", wearer_sets_threshold)

        def device_reports_conflict():
            ack = device.care_report(None)
            assert ack["orders"]["care_settings"]["version"] == 1 and ack["orders"]["care_settings"]["min_hr"] == 45, ack
            device.care_report(1, ["heart_rate_low.threshold_bpm"], {"heart_rate_low.threshold_bpm": 40})
            self.tab(browser, "wearer-data")
            self.tab(browser, "wearer-care")
            wait_for(lambda: "runs version 1" in browser.find(FORM + " .care-device-version").text, what="the device's version")
            conflict = wait_for(lambda: next(iter(browser.find_all(FORM + " .care-conflict")), None), what="the conflict")
            assert conflict.displayed()
            assert "the low heart-rate limit: 40 bpm on the device" in conflict.text, conflict.text
            assert conflict.attribute("data-fields") == "heart_rate_low.threshold_bpm"
            assert browser.find(FORM + " .care-contacts").property("value") == "Yorick <b>Q</b>; son; +44 7700 900123"
            self.shot(browser, "02-device-conflict")
        self.check("the device's version and its local override show as a conflict on the wearer's form", device_reports_conflict)
        self.look(browser, "people-wearer-care", "the wearer's care settings and carers")

        def wearer_adds_carer():
            browser.find("#carer-username").send_keys("cara")
            browser.find("#carer-add").click()
            row = wait_for(lambda: next(iter(browser.find_all("#carers tr[data-carer]")), None), what="the carer in the list")
            assert HOSTILE_CARER in row.text, row.text
            assert "no" in row.text
            assert self.pwned(browser) is None, "a hostile name ran script"
            self.shot(browser, "03-carer-added")
        self.check("the wearer names a carer by username (the hostile name shown as text)", wearer_adds_carer)

        def carer_changes_threshold():
            self.sign_in(browser, server.base, "cara")
            assert browser.find("#whoami").text.startswith(HOSTILE_CARER), browser.find("#whoami").text
            row = wait_for(lambda: next(iter(browser.find_all("#cared-for tr[data-person]")), None), what="the person cared for")
            assert "Ada Lovelace" in row.text and "pi-0001" in row.text, row.text
            row.find('button[data-action="open-person"]').click()
            form_css = "#carer-care-forms " + FORM
            wait_for(lambda: browser.find(form_css + " .care-min").property("value") == "45", what="the person's settings in the carer's form")
            assert browser.find_all(form_css + " .care-conflict"), "the carer sees the conflict too"
            wait_for(lambda: browser.find("#carer-hr-summary").text.startswith("2 readings"), what="the person's heart rate")
            assert "has not allowed downloads" in browser.find("#carer-person-downloads").text
            form = browser.find(form_css)
            self.set_number(form, ".care-max", 150)
            form.find(".care-save").click()
            wait_for(lambda: browser.find(form_css + " .care-message").text.startswith("Saved version 2"), what="saved version 2")
            assert "set by " + HOSTILE_CARER in browser.find(form_css + " .care-server-version").text
            assert "takes version 2" in browser.find(form_css + " .care-device-version").text
            # The person's chart draws the limit in force on the device, the device's own.
            label = browser.find("#carer-hr-chart text.limit-label-low").text
            assert label == "low limit 40 bpm (the device's own, in force)", label
            assert self.fetch_status(browser, "GET", f"/v1/people/{ada['id']}/export?format=csv") == 403
            assert self.fetch_status(browser, "POST", "/v1/devices/pi-0001/erase") == 403
            assert self.pwned(browser) is None
            self.shot(browser, "04-carer")
            status, view = http(server.base, "GET", "/v1/devices/pi-0001/care-settings", token=ADMIN)
            assert view["settings"]["max_hr"] == 150 and view["settings"]["min_hr"] == 45, view
        self.check("the carer signs in, sees the person and changes a threshold; no download, no erasure", carer_changes_threshold)

        def device_version_refreshes():
            # A short poll (the page's default is 15 s); the device takes version 2 meanwhile and
            # the carer's page says so without a reload.
            browser.get(server.base + "/people?care_poll_ms=300")
            row = wait_for(lambda: next(iter(browser.find_all("#cared-for tr[data-person]")), None), what="the person cared for")
            row.find('button[data-action="open-person"]').click()
            form_css = "#carer-care-forms " + FORM
            wait_for(lambda: "takes version 2" in browser.find(form_css + " .care-device-version").text, what="version 2 pending")
            browser.script("window.__samePage = 1")
            device.care_report(2, ["heart_rate_low.threshold_bpm"], {"heart_rate_low.threshold_bpm": 40})
            wait_for(lambda: "runs version 2" in browser.find(form_css + " .care-device-version").text, what="the device's new version, by itself")
            line = browser.find(form_css + " .care-device-version")
            assert "care-current" in line.attribute("class") and line.attribute("role") == "status", line.attribute("class")
            assert browser.script("return window.__samePage === undefined ? null : window.__samePage") == 1, "the page was reloaded"
            assert "the low heart-rate limit: 40 bpm on the device" in browser.find(form_css + " .care-conflict").text
            assert "learns it at its next sync" not in browser.find("#carer-care-forms .automated-sos").text
            self.shot(browser, "04b-device-version-refreshed")
        self.check("the carer's page shows the device taking the new version by itself, with no reload", device_version_refreshes)

        def carer_sees_paused_badge():
            # The wearer paused monitoring 10 minutes ago: the carer's page shows it as the
            # console's device list does, with how long, read through the access policy.
            wait_for(lambda: "protected as usual" in browser.find("#carer-protection").text, what="no badge while the wearer is protected")
            device.batch_seq += 1
            heartbeat = {"strap": "connected", "gpsd": "fix", "store_depth": 0, "store_bytes": 4096, "care_version": 2,
                         "care_conflicts": ["heart_rate_low.threshold_bpm"], "care_overrides": {"heart_rate_low.threshold_bpm": 40},
                         "monitoring_paused": True, "conditions_for_s": {"monitoring_paused": 600}}
            body = {"version": 1, "device_id": device.id, "batch_seq": device.batch_seq, "idempotency_key": f"{device.id}:{device.batch_seq}",
                    "dropped_by_budget": 0, "heartbeat": heartbeat, "readings": []}
            status, ack = http(server.base, "POST", "/v1/batches", body, token=device.token, headers={"Idempotency-Key": body["idempotency_key"]})
            assert status == 200, (status, ack)
            browser.get(server.base + "/people")
            row = wait_for(lambda: next(iter(browser.find_all("#cared-for tr[data-person]")), None), what="the person cared for")
            row.find('button[data-action="open-person"]').click()
            item = wait_for(lambda: next(iter(browser.find_all('#carer-protection li[data-device-id="pi-0001"]')), None), what="pi-0001's protection")
            badge = wait_for(lambda: next((b for b in item.find_all(".badge") if b.text.startswith("monitoring paused")), None), what="the paused badge")
            assert badge.text in ("monitoring paused for 10 min", "monitoring paused for 11 min"), badge.text
            assert "protected as usual" not in item.text, item.text
            assert self.pwned(browser) is None
            self.shot(browser, "04c-paused-badge")
        self.check("the carer's page shows a paused wearer's badge with how long, as the console does", carer_sees_paused_badge)
        self.look(browser, "people-carer", "the carer's people and a person's page")

        def wearer_sees_log_and_removes():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-requests")
            wait_for(lambda: "changed care settings of pi-0001 to version 2" in browser.find("#access-log").text, what="the carer's change in the log")
            log = browser.find("#access-log").text
            assert HOSTILE_CARER in log and "carer" in log and "care settings of pi-0001" in log, log
            assert self.pwned(browser) is None
            self.shot(browser, "05-access-log")
            self.tab(browser, "wearer-care")
            wait_for(lambda: browser.find_all('#carers button[data-action="remove-carer"]'), what="the Remove button")
            browser.find('#carers button[data-action="remove-carer"]').click()
            wait_for(lambda: not browser.find_all("#carers tr[data-carer]"), what="the carer removed")
        self.check("the wearer sees the carer's reads and change in the access log, and removes the carer", wearer_sees_log_and_removes)

        def carer_sees_nothing():
            self.sign_in(browser, server.base, "cara")
            wait_for(lambda: len(browser.find_all("#cared-for tr")) == 1, what="the empty list")
            assert not browser.find_all("#cared-for tr[data-person]")
            assert self.fetch_status(browser, "GET", "/v1/devices/pi-0001/care-settings") == 403
            assert self.fetch_status(browser, "GET", f"/v1/people/{ada['id']}/heart-rate?from=0") == 403
            assert self.fetch_status(browser, "GET", f"/v1/people/{ada['id']}/protection") == 403
        self.check("after removal the carer sees and reads nothing of the person", carer_sees_nothing)

        def wearer_switches_automated_sos():
            self.sign_in(browser, server.base, "ada")
            self.tab(browser, "wearer-care")
            state = wait_for(lambda: next(iter(browser.find_all("#care-forms .automated-sos-state")), None), what="the AutomatedSOS state")
            assert state.text.startswith("On:") and "the operator's dispatch centre" in state.text, state.text
            browser.click("#care-forms .automated-sos-switch")
            wait_for(lambda: browser.find("#care-forms .automated-sos-state").text.startswith("Off:"), what="AutomatedSOS off")
            assert "the SOS button still reaches a dispatcher" in browser.find("#care-forms .automated-sos-state").text
            version = browser.find("#care-forms " + FORM + " .care-server-version").text
            assert "version 3, set by Ada Lovelace" in version, version
            status, view = http(server.base, "GET", f"/v1/people/{ada['id']}/automated-sos", token=ADMIN)
            assert status == 200 and view["service"]["active"] is False and view["service"]["changed_by"] == "person", (status, view)
            self.shot(browser, "06-automated-sos-off")
            browser.click("#care-forms .automated-sos-switch")
            wait_for(lambda: browser.find("#care-forms .automated-sos-state").text.startswith("On:"), what="AutomatedSOS on again")
        self.check("the wearer sees AutomatedSOS on and who provides it, turns it off and on again", wearer_switches_automated_sos)


if __name__ == "__main__":
    sys.exit(CarerTest.main())
