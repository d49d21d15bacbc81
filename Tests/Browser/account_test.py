#!/usr/bin/env python3
"""Accounts people manage themselves in a real browser: Debian's chromium through chromium-driver,
against a real trackme-server on loopback whose account notifier is a script that writes each
message to a file. A wearer signs up (a breached password is refused on the page), cannot sign in
before verifying, opens the link from the "message" and signs in; asks for a reset link, sets a
new password from it, and sees the link refused the second time; signed in, changes the password.
Run by `make browser-tests`; screenshots go to simulations/out/browser/account-*.png.

Usage: account_test.py --server .build/debug/trackme-server [--out simulations/out/browser]
"""
import os
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import Server, http  # noqa: E402
from webdriver import CheckRun, Chromium, wait_for  # noqa: E402

HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Ada <b>Lovelace</b>'
BREACHED = "correct horse battery staple"
FIRST = "a walk along the river"
SECOND = "tea by the harbour at noon"
THIRD = "seven quiet lanterns glow"


class AccountTest(CheckRun):
    def __init__(self, binary, out):
        self.binary, self.out = binary, out
        self.workdir = tempfile.mkdtemp(prefix="trackme-account-browser-")
        self.results = []
        self.notices = os.path.join(self.workdir, "notices.txt")

    def shot(self, browser, name):
        self.look(browser, f"account-{name}", f"the account page ({name})")

    def notifier(self):
        path = os.path.join(self.workdir, "notify.sh")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\necho "$TRACKME_PURPOSE|$TRACKME_ACCOUNT|$TRACKME_EMAIL|$TRACKME_LINK" >> "{self.notices}"\n')
        os.chmod(path, stat.S_IRWXU)
        breached = os.path.join(self.workdir, "breached.txt")
        with open(breached, "w") as f:
            f.write("123456\npassword\n" + BREACHED + "\n")
        return ["--account-notifier", path, "--breached-passwords-file", breached]

    def links(self, purpose):
        if not os.path.exists(self.notices):
            return []
        with open(self.notices) as f:
            return [line.strip().split("|")[3] for line in f if line.startswith(purpose + "|")]

    def fill(self, browser, css, text):
        field = browser.find(css)
        field.clear()
        field.send_keys(text)

    def message(self, browser):
        return browser.find("#message").text

    def sign_in_status(self, browser, username, password):
        """Signs the browser in as the console does (fetch, same origin): the status."""
        return browser.async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/v1/session', {method: 'POST', headers: {'Content-Type': 'application/json'}, credentials: 'same-origin',"
            " body: JSON.stringify({username: arguments[0], password: arguments[1]})}).then(r => done(r.status), e => done('error ' + e));",
            username, password)

    def sign_up_flow(self, server, browser):
        browser.get(server.base + "/account/sign-up")
        wait_for(lambda: browser.find("#sign-up").displayed(), what="the sign-up form")
        self.fill(browser, "#sign-up-name", HOSTILE_NAME)
        self.fill(browser, "#sign-up-username", "ada")
        self.fill(browser, "#sign-up-email", "ada@example.org")
        self.fill(browser, "#sign-up-password", BREACHED)
        browser.click("#sign-up-submit")
        wait_for(lambda: "breaches" in self.message(browser), what="the breached password refused")
        self.shot(browser, "breached")
        assert self.links("verify_account") == [], "nothing sent for a refused sign-up"
        self.fill(browser, "#sign-up-password", FIRST)
        browser.click("#sign-up-submit")
        wait_for(lambda: "ada@example.org" in self.message(browser), what="the sign-up accepted")
        self.shot(browser, "signed-up")
        assert self.sign_in_status(browser, "ada", FIRST) == 403, "unverified accounts do not sign in"
        link = wait_for(lambda: self.links("verify_account"), what="the verification link in the notifier's file")[0]
        assert link.startswith(server.base + "/account/verify#"), link
        browser.get(link)
        wait_for(lambda: "verified" in self.message(browser), what="the address verified")
        self.shot(browser, "verified")
        assert self.sign_in_status(browser, "ada", FIRST) == 200
        assert browser.script("return window.__pwned === undefined"), "a name was run as markup"

    def reset_flow(self, server, browser):
        browser.get(server.base + "/account/reset")
        wait_for(lambda: browser.find("#reset-request").displayed(), what="the reset form")
        self.fill(browser, "#reset-username", "ada")
        browser.click("#reset-request-submit")
        wait_for(lambda: "If an account" in self.message(browser), what="the reset answer")
        link = wait_for(lambda: self.links("password_reset"), what="the reset link in the notifier's file")[0]
        browser.get(link)
        wait_for(lambda: browser.find("#reset-confirm").displayed(), what="the new-password form")
        self.fill(browser, "#reset-password", "short")
        browser.click("#reset-confirm-submit")
        wait_for(lambda: "at least 12" in self.message(browser), what="a short password refused")
        self.fill(browser, "#reset-password", SECOND)
        browser.click("#reset-confirm-submit")
        wait_for(lambda: "new password is set" in self.message(browser), what="the new password set")
        self.shot(browser, "reset")
        # The same link again, from a fresh load: refused, and nothing changes.
        browser.get("about:blank")
        browser.get(link)
        wait_for(lambda: browser.find("#reset-confirm").displayed(), what="the new-password form again")
        self.fill(browser, "#reset-password", THIRD)
        browser.click("#reset-confirm-submit")
        wait_for(lambda: "used already" in self.message(browser), what="the used link refused")
        self.shot(browser, "link-used")
        assert self.sign_in_status(browser, "ada", THIRD) == 401
        assert self.sign_in_status(browser, "ada", SECOND) == 200

    def change_flow(self, server, browser):
        assert self.sign_in_status(browser, "ada", SECOND) == 200
        browser.get(server.base + "/account/password")
        wait_for(lambda: browser.find("#change-form").displayed(), what="the change form")
        self.fill(browser, "#change-current", "not my password")
        self.fill(browser, "#change-new", THIRD)
        browser.click("#change-submit")
        wait_for(lambda: "wrong" in self.message(browser), what="a wrong current password refused")
        self.fill(browser, "#change-current", SECOND)
        browser.click("#change-submit")
        wait_for(lambda: "password is changed" in self.message(browser), what="the password changed")
        self.shot(browser, "changed")
        assert self.sign_in_status(browser, "ada", THIRD) == 200

    def closed_flow(self, browser):
        closed = Server(self.binary, self.workdir, "--no-sign-up", *self.notifier())
        try:
            browser.get(closed.base + "/account/sign-up")
            wait_for(lambda: browser.find("#sign-up-closed").displayed(), what="the closed notice")
            assert "turned off" in browser.find("#sign-up-closed").text
            assert not browser.find("#sign-up-form").displayed()
            assert http(closed.base, "POST", "/v1/sign-up", {"username": "x", "password": FIRST, "email": "x@example.org", "role": "wearer"})[0] == 403
            self.shot(browser, "closed")
        finally:
            closed.stop()

    def run(self):
        server = Server(self.binary, self.workdir, *self.notifier())
        browser = Chromium()
        try:
            self.check("sign-up: breached password refused, unverified cannot sign in, the link verifies", lambda: self.sign_up_flow(server, browser))
            self.check("reset: link from the notifier sets a new password once", lambda: self.reset_flow(server, browser))
            self.check("change of password signed in", lambda: self.change_flow(server, browser))
            self.check("sign-up turned off: the page says so", lambda: self.closed_flow(browser))
        finally:
            browser.quit()
            server.stop()
        return self.summary(self.out)


if __name__ == "__main__":
    sys.exit(AccountTest.main())
