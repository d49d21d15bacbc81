#!/usr/bin/env python3
"""The dispatcher console in a real browser: Debian's chromium through chromium-driver (W3C
WebDriver over HTTP), against a real trackme-server on loopback, with a device speaking the real
HTTP API. Run by `make browser-tests` (part of `make test`); screenshots go to
simulations/out/browser/.

Besides a device speaking the HTTP API from this script, one flow runs the real agent
(`trackme-agent run` with the simulated strap replaying a heart-rate trace and a real gpsd
under gpsfake): its alert reaches the board, the dispatcher's clicks reach the agent's status.

Usage: console_test.py --server .build/debug/trackme-server --agent .build/debug/trackme-agent [--out simulations/out/browser]
"""
import json
import re
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import CheckRun, Chromium, WebDriverError, free_port, wait_for  # noqa: E402

ADMIN = "browser-test-admin-token"
HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Ada <b>Lovelace</b>'
HOSTILE_NOTE = "<script>window.__pwned=2</script><b>son</b> is on the way"


def http(base, method, path, body=None, token=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw)
        except ValueError:
            return error.code, raw.decode(errors="replace")


class Server:
    def __init__(self, binary, workdir, *extra):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(workdir, f"server-{self.port}.log"), "w")
        env = dict(os.environ, TRACKME_ADMIN_TOKEN=ADMIN)
        self.process = subprocess.Popen(
            [binary, "--plain-http", "--port", str(self.port), "--db", os.path.join(workdir, f"server-{self.port}.sqlite"), "--bcrypt-cost", "10", *extra],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._up, timeout=30, what="trackme-server /health")

    def _up(self):
        if self.process.poll() is not None:
            raise AssertionError(f"trackme-server exited with {self.process.returncode}")
        try:
            return http(self.base, "GET", "/health")[0] == 200
        except OSError:
            return False

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


class SilentCutProxy:
    """A TCP proxy between the browser and the server that, on `cut()`, stops forwarding in both
    directions without closing either socket: a network that dies without telling anyone (a Wi-Fi
    or VPN change). Bytes sent meanwhile, and connections opened meanwhile, wait in the kernel's
    buffers and go through after `restore()`."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.flowing = threading.Event()
        self.flowing.set()
        self.sockets = []
        self.requests = []  # the request lines the browser sent through, as they were forwarded
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                return
            self.sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target, source is client), daemon=True).start()

    def board_reads(self):
        return sum(1 for line in self.requests if line.startswith("GET /v1/alerts?status=open "))

    def _pump(self, source, target, from_browser):
        try:
            while True:
                self.flowing.wait()
                data = source.recv(65536)
                # Read just before a cut: held back with the rest.
                self.flowing.wait()
                if not data:
                    target.shutdown(socket.SHUT_WR)
                    return
                if from_browser:
                    self.requests += [line.decode(errors="replace") for line in data.split(b"\r\n") if line.startswith((b"GET ", b"POST "))]
                target.sendall(data)
        except OSError:
            pass

    def cut(self):
        self.flowing.clear()

    def restore(self):
        self.flowing.set()

    def close(self):
        self.flowing.set()
        self.listener.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


class TileServer:
    """Map tiles on loopback (one grey PNG for every z/x/y) for `--tile-url`, counting requests."""

    def __init__(self):
        def chunk(kind, data):
            return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
        raw = b"".join(b"\x00" + b"\x80" * 256 for _ in range(256))
        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", (256).to_bytes(4, "big") * 2 + b"\x08\x00\x00\x00\x00") + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(png)))
                self.end_headers()
                self.wfile.write(png)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/{{z}}/{{x}}/{{y}}.png"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Device:
    """A wearer's device over the real HTTP API: alert updates and batches, as the agent sends them."""

    def __init__(self, server, device_id, person):
        status, body = http(server.base, "POST", "/v1/devices", {"device_id": device_id, "person": person}, token=ADMIN)
        assert status == 201, (status, body)
        self.server, self.id, self.token = server, device_id, body["token"]
        self.batch_seq = 0
        self.reading_seq = 0
        self.boot = str(uuid.uuid4())

    def stamp(self, mono_s, trusted=True):
        # A device without a set clock (no RTC, no NTP yet) reports 1970 and says so.
        wall = int(time.time() * 1000) if trusted else int(mono_s * 1000)
        return {"boot_id": self.boot, "mono_ns": int(mono_s * 1e9), "wall_ms": wall, "wall_trusted": trusted}

    def alert(self, alert_id, seq, kind="no_pulse", kind_type="raised", lat=45.4642, lon=9.19, state="raised", trusted=True):
        t = self.stamp(100 + seq, trusted)
        update = {
            "version": 1, "update_seq": seq, "type": kind_type, "sent": t,
            "alert": {
                "alert_id": alert_id, "device_id": self.id, "kind": kind, "state": state, "first_critical": self.stamp(95, trusted),
                "raised": self.stamp(100, trusted),
                "triggering_readings": [{"hr": {"bpm": 0, "contact": "detected", "rr": []}, "t": self.stamp(95, trusted)}],
                "position": {"age_ms": 700, "fix": {"mode": 3, "lat": lat, "lon": lon}},
            },
        }
        status, body = http(self.server.base, "POST", "/v1/alerts", update, token=self.token)
        assert status == 200, (status, body)
        return body

    def batch(self, bpm=0):
        self.batch_seq += 1
        self.reading_seq += 1
        body = {
            "version": 1, "device_id": self.id, "batch_seq": self.batch_seq, "idempotency_key": f"{self.id}:{self.batch_seq}",
            "dropped_by_budget": 0,
            "heartbeat": {"strap": "connected", "gpsd": "fix", "store_depth": 0, "store_bytes": 4096, "battery_pct": 64},
            "readings": [{"seq": self.reading_seq, "kind": "hr", "t": self.stamp(self.reading_seq), "hr": {"bpm": bpm, "contact": "detected", "rr": []}}],
        }
        status, ack = http(self.server.base, "POST", "/v1/batches", body, token=self.token, headers={"Idempotency-Key": body["idempotency_key"]})
        assert status == 200, (status, ack)
        return ack


class Agent:
    """The real `trackme-agent run`: the simulated strap (ATT over a socket pair) replaying a
    trace that goes from a normal heart rate to one over the wearer's limit and then to a flat
    line, a real gpsd under gpsfake looping a receiver capture, the real HTTP sync and dispatch."""

    PERSON = "Grace Hopper"

    def __init__(self, binary, server, workdir):
        self.binary = binary
        self.dir = os.path.join(workdir, "agent")
        os.makedirs(self.dir)
        status, body = http(server.base, "POST", "/v1/devices", {"device_id": "pi-0100", "person": {
            "name": self.PERSON, "age": 80, "max_hr": 120, "contacts": [{"name": "Hal", "relation": "son", "phone": "+39 555 0199"}]}}, token=ADMIN)
        assert status == 201, (status, body)
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write(body["token"])
        trace = os.path.join(self.dir, "trace.csv")
        with open(trace, "w") as f:
            f.write("t_ms,bpm,rr_ms,contact\n")
            # The rate climbs over 90 s, as a tachycardia that is not a re-entrant rhythm does
            # (a step from 72 to 160 within a beat is the onset the lethal-rhythm rule is for).
            for second in range(1, 900):
                bpm = 72 if second < 20 else min(160, 72 + (second - 20) * 88 // 90) if second < 150 else 0
                rr = "" if bpm == 0 else str(round(60000 / bpm))
                f.write(f"{second * 1000},{bpm},{rr},yes\n")
        self.gps_port = free_port()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.gpsfake = subprocess.Popen(
            ["gpsfake", "-q", "-n", "-P", str(self.gps_port), os.path.join(root, "simulations/traces/gpsd/neo-m8n.log")],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "gpsfake.log"), "w"), cwd=self.dir)
        self.socket = os.path.join(self.dir, "agent.sock")
        config = os.path.join(self.dir, "agent.yaml")
        with open(config, "w") as f:
            f.write(f"""person: {{name: {self.PERSON}, age: 80, max_hr: 120}}
server: {{url: "{server.base}", device_id: pi-0100, token_file: token}}
strap:
  transport: socketpair
  trace: {trace}
  pace: 2
gpsd: {{host: 127.0.0.1, port: {self.gps_port}}}
store: {{path: data/agent.sqlite}}
sos: {{countdown_seconds: 0}}
status: {{socket: agent.sock}}
metrics: {{enabled: false}}
""")
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM")}
        self.log = open(os.path.join(self.dir, "agent.log"), "w")
        self.process = subprocess.Popen([binary, "run", "--config", config], env=env, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=self.log)

    def status(self):
        if self.process.poll() is not None:
            raise AssertionError(f"trackme-agent exited with {self.process.returncode} (log: {self.dir}/agent.log)")
        result = subprocess.run([self.binary, "status", "--json", "--socket", self.socket], capture_output=True, timeout=10)
        return json.loads(result.stdout) if result.returncode == 0 else {}

    def alert(self):
        return self.status().get("alert") or {}

    def alert_id(self):
        return self.alert().get("alert_id")

    def stop(self):
        for process in (self.process, self.gpsfake):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        self.log.close()


class ConsoleTest(CheckRun):
    def __init__(self, binary, agent, out):
        self.binary = binary
        self.agent = agent
        self.out = out
        self.workdir = tempfile.mkdtemp(prefix="trackme-browser-")
        self.results = []

    def shot(self, browser, name):
        browser.screenshot(os.path.join(self.out, f"{name}.png"))

    def sign_in(self, browser, base, username, password):
        browser.get(base + "/")
        wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form")
        browser.find("#username").send_keys(username)
        browser.find("#password").send_keys(password)
        browser.find("#signin-button").click()

    def card(self, browser, alert_id):
        found = browser.find_all(f'article.alert-card[data-alert-id="{alert_id}"]')
        return found[0] if found else None

    def run(self):
        def bad_heartbeat():
            for value in ("0", "61"):
                result = subprocess.run([self.binary, "--plain-http", "--port", str(free_port()), "--db", os.path.join(self.workdir, "never.sqlite"),
                                         "--feed-heartbeat-seconds", value], capture_output=True, text=True, timeout=60, env=dict(os.environ, TRACKME_ADMIN_TOKEN=ADMIN))
                assert result.returncode != 0 and "--feed-heartbeat-seconds must be 1-60" in result.stderr, (value, result.returncode, result.stderr[-500:])
        self.check("--feed-heartbeat-seconds outside 1-60 is refused with a clear error", bad_heartbeat)
        server = Server(self.binary, self.workdir)
        browser = Chromium()
        try:
            self.main_flow(server, browser)
        finally:
            browser.quit()
            server.stop()
        short = Server(self.binary, self.workdir, "--session-seconds", "8", "--silence-seconds", "1")
        browser = Chromium()
        try:
            self.check("an expired session returns to sign-in; a silent device is marked", lambda: self.expiry_flow(short, browser))
        finally:
            browser.quit()
            short.stop()
        contact = Server(self.binary, self.workdir, "--contact-notifier", self.notifier_script(),
                         "--contact-after-seconds", "1", "--contact-repeat-seconds", "600")
        browser = Chromium()
        try:
            self.contact_flow(contact, browser)
        finally:
            browser.quit()
            contact.stop()
        cut = Server(self.binary, self.workdir, "--feed-heartbeat-seconds", "2")
        proxy = SilentCutProxy(cut.port)
        browser = Chromium()
        try:
            self.cut_flow(cut, proxy, browser)
        finally:
            browser.quit()
            proxy.close()
            cut.stop()
        tiles = TileServer()
        desk = Server(self.binary, self.workdir, "--tile-url", tiles.url, "--contact-notifier", self.notifier_script(),
                      "--contact-after-seconds", "1", "--contact-repeat-seconds", "600")
        # The browser's own autoplay policy: no sound until the dispatcher clicks or presses a key.
        browser = Chromium(autoplay=False)
        try:
            self.desk_flow(desk, tiles, browser)
        finally:
            browser.quit()
            desk.stop()
            tiles.close()
        care = Server(self.binary, self.workdir)
        browser = Chromium()
        try:
            self.care_flow(care, browser)
        finally:
            browser.quit()
            care.stop()
        fielded = Server(self.binary, self.workdir)
        browser = Chromium()
        agent = None
        try:
            agent = Agent(self.agent, fielded, self.workdir)
            self.agent_flow(fielded, browser, agent)
        finally:
            if agent:
                agent.stop()
            browser.quit()
            fielded.stop()
        return self.summary(self.out)

    def main_flow(self, server, browser):
        status, _ = http(server.base, "POST", "/v1/accounts",
                         {"username": "dana", "password": "correct horse battery", "display_name": "Dana <i>D.</i>", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        ada = Device(server, "pi-0001", {
            "name": HOSTILE_NAME, "age": 81, "resting_hr": 62, "min_hr": 40, "max_hr": 150,
            "notes": "Door code 4711 <script>window.__pwned=3</script>",
            "contacts": [{"name": "Ben", "relation": "son", "phone": "+39 555 0101"}]})
        bo = Device(server, "pi-0002", {"name": "Bo Jansen", "age": 74})
        ada.batch(bpm=71)
        state = {}

        browser.get(server.base + "/")
        wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form")
        self.look(browser, "console-signed-out", "the console signed out")

        def signs_in():
            self.sign_in(browser, server.base, "dana", "wrong password")
            wait_for(lambda: "wrong" in browser.find("#signin-message").text, what="the refusal")
            browser.find("#password").clear()
            browser.find("#password").send_keys("correct horse battery")
            browser.find("#signin-button").click()
            wait_for(lambda: browser.find("#console").displayed(), what="the console")
            assert browser.find("#whoami").text.startswith("Dana <i>D.</i>"), browser.find("#whoami").text
            wait_for(lambda: browser.find("#feed-status").text == "live", what="the live feed")
            cookie = [c for c in browser.cookies() if c["name"] == "trackme_session"][0]
            assert cookie["httpOnly"] and cookie.get("sameSite") == "Strict", cookie
            assert browser.script("return document.cookie") == "", "the session cookie must not be readable by scripts"
            state["cookie"] = cookie["value"]
        self.check("sign in (a wrong password is refused; the cookie is HttpOnly and SameSite=Strict)", signs_in)

        def alert_appears():
            ada.alert("alert-ada", 0)
            card = wait_for(lambda: self.card(browser, "alert-ada"), what="the alert card")
            wait_for(lambda: card.find(".person-name").text == HOSTILE_NAME, what="the person's name as text")
            assert "45.46420, 9.19000" in card.find(".alert-position").text, card.find(".alert-position").text
            assert card.find(".alert-kind").text == "no pulse"
            assert "Ben (son) +39 555 0101" in card.find(".contacts").text
            assert card.find(".person-notes").text == "Door code 4711 <script>window.__pwned=3</script>"
            assert "[object" not in card.text and "undefined" not in card.text, card.text
            wait_for(lambda: browser.title == "SOS: " + HOSTILE_NAME + " — no pulse", what="the tab title naming the person and the kind")
            for seq in range(1, 4):
                ada.alert("alert-ada", seq, kind_type="position", lat=45.4642 + seq * 0.0002, lon=9.19 + seq * 0.0001)
            wait_for(lambda: len(browser.find_all('article[data-alert-id="alert-ada"] .grid-map polyline')) == 1
                     and "45.46480" in self.card(browser, "alert-ada").find(".alert-position").text, what="the track")
            wait_for(lambda: "delivered" in self.card(browser, "alert-ada").find(".timeline").text, what="the timeline")
            wait_for(lambda: re.fullmatch(r"Reached the server -?\d+\.\d s after the first critical reading, -?\d+\.\d s after the "
                                          r"reading that completed the rule\.", self.card(browser, "alert-ada").find(".timing").text),
                     what="both timing figures on the card")
            self.shot(browser, "01-board-new-alert")
        self.check("a device's alert appears with the person's name, position, track and timeline", alert_appears)
        self.look(browser, "console-board", "the console's board as a dispatcher")

        def markup_is_text():
            assert browser.script("return window.__pwned === undefined"), "markup from data ran as script"
            assert browser.find_all("article.alert-card .person-name img") == [], "a name became an element"
            card = self.card(browser, "alert-ada")
            card.find(".note-text").send_keys(HOSTILE_NOTE)
            card.find(".note-add").click()
            wait_for(lambda: [n.text for n in self.card(browser, "alert-ada").find_all(".note-body")] == [HOSTILE_NOTE], what="the note as text")
            assert browser.script("return window.__pwned === undefined"), "a note ran as script"
            assert browser.find_all("article.alert-card .notes b") == [], "a note became markup"
        self.check("markup in a name, carer notes and a dispatcher note renders as text", markup_is_text)

        def acknowledge():
            self.card(browser, "alert-ada").find(".ack").click()
            wait_for(lambda: "acknowledged" in self.card(browser, "alert-ada").attribute("class"), what="the card acknowledged")
            assert not browser.title.startswith("SOS"), browser.title
            ack = ada.batch()
            assert ack["acknowledged_alerts"] == ["alert-ada"], ack
        self.check("acknowledge: the page shows it and the device's next batch reply carries it", acknowledge)

        def csrf():
            cookie = {"Cookie": "trackme_session=" + state["cookie"]}
            status, body = http(server.base, "POST", "/v1/alerts/alert-ada/notes", {"text": "forged"}, headers=cookie)
            assert status == 403 and body["error"]["code"] == "csrf", (status, body)
            # The same from the page's own origin, without the header the page adds.
            result = browser.async_script(
                "const done = arguments[arguments.length - 1];"
                "fetch('/v1/alerts/alert-ada/resolve', {method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json'},"
                " body: JSON.stringify({outcome: 'false_alarm'})}).then(r => done(r.status));")
            assert result == 403, result
            status, detail = http(server.base, "GET", "/v1/alerts/alert-ada", headers=cookie)
            assert status == 200 and detail["alert"]["open"] and [n["text"] for n in detail["notes"]] == [HOSTILE_NOTE], detail
        self.check("a state change without the CSRF token is 403 and changes nothing", csrf)

        def no_event_missed():
            before = browser.script("return window.trackmeConsole.lastEventId()")
            browser.script("window.trackmeConsole.dropStream()")
            wait_for(lambda: browser.find("#feed-status").text == "offline", what="the feed dropped")
            bo.alert("alert-bo", 0, kind="heart_rate_high", lat=45.47, lon=9.2)
            ada.alert("alert-ada", 4, kind_type="position", lat=45.4652, lon=9.1906)
            status, _ = http(server.base, "POST", "/v1/alerts/alert-ada/notes", {"text": "neighbour has a key"}, token=dispatcher_token(server))
            assert status == 201
            browser.script("window.trackmeConsole.resumeStream()")
            wait_for(lambda: self.card(browser, "alert-bo"), what="the alert raised while the feed was down")
            wait_for(lambda: "neighbour has a key" in self.card(browser, "alert-ada").find(".notes").text, what="the note added while down")
            seen = wait_for(lambda: (lambda ids: ids if len([i for i in ids if i > before]) >= 3 else None)(
                browser.script("return window.trackmeConsole.seenEventIds()")), what="the missed events")
            assert seen == list(range(seen[0], seen[-1] + 1)), f"a gap in the feed ids the page saw: {seen}"
            board = [c.attribute("data-alert-id") for c in browser.find_all("article.alert-card")]
            assert board == ["alert-ada", "alert-bo"], board  # no pulse is graver than a high heart rate
            self.shot(browser, "02-board-two-alerts")
        self.check("drop the live feed: it resumes after the last event id and nothing is missed", no_event_missed)

        def resolve():
            card = self.card(browser, "alert-ada")
            card.find('.resolve-outcome option[value="help_arrived"]').click()
            card.find(".resolve").click()
            browser.accept_dialog()
            wait_for(lambda: self.card(browser, "alert-ada") is None, what="the card to leave the board")
            ack = ada.batch()
            assert ack["resolved_alerts"] == ["alert-ada"], ack
            reply = ada.alert("alert-ada", 5, kind_type="position")
            assert reply["resolved"] is True, reply
            browser.find('.tab[data-tab="history"]').click()
            # The history re-renders as events arrive: find the entry afresh at every look.
            entry = lambda: browser.find('.history-item[data-alert-id="alert-ada"]')  # noqa: E731
            wait_for(lambda: entry().find(".outcome").text == "help arrived", what="the history entry with its outcome")
            wait_for(lambda: "by Dana <i>D.</i>" in entry().text, what="who resolved it, by name, as text")

            def expanded():
                if "resolved — help arrived" in entry().find(".history-detail").text:
                    return True
                entry().find(".history-show").click()
                return False
            wait_for(expanded, what="the history timeline")
            self.shot(browser, "03-history")
            browser.find('.tab[data-tab="devices"]').click()
            wait_for(lambda: browser.find_all('tr[data-device-id="pi-0001"]'), what="the devices list")
            # The list is drawn afresh as the device reports: read the row again at each look.
            wait_for(lambda: "64%" in browser.find('tr[data-device-id="pi-0001"]').text, what="the device's battery")
            browser.find('.tab[data-tab="board"]').click()
        self.check("resolve with an outcome: the alert closes, the device is told, history keeps it", resolve)
        for tab in ("history", "devices"):
            browser.find(f'.tab[data-tab="{tab}"]').click()
            self.look(browser, f"console-{tab}", f"the console's {tab} as a dispatcher")
        browser.find('.tab[data-tab="board"]').click()

        def sign_out():
            browser.find("#signout").click()
            wait_for(lambda: browser.find("#signin").displayed(), what="the sign-in form")
            status, _ = http(server.base, "GET", "/v1/session", headers={"Cookie": "trackme_session=" + state["cookie"]})
            assert status == 401, status
        self.check("sign out ends the session on the server", sign_out)

        def admin_accounts():
            status, _ = http(server.base, "POST", "/v1/accounts", {"username": "ava", "password": "correct horse battery", "display_name": "Ava Admin", "role": "admin"}, token=ADMIN)
            assert status == 201, status
            self.sign_in(browser, server.base, "ava", "correct horse battery")
            wait_for(lambda: browser.find("#accounts-tab").displayed(), what="the admin's Accounts tab")
            browser.find("#accounts-tab").click()
            wait_for(lambda: browser.find("#account-list tr"), what="the accounts")
        self.check("an admin account signs in and sees the Accounts tab", admin_accounts)
        self.look(browser, "console-accounts", "the console's accounts as an admin")

    def notifier_script(self):
        """The operator's notifier (an SMS gateway's CLI in service): here it writes each
        contact's link to a file the test reads."""
        self.links = os.path.join(self.workdir, "contact-links.txt")
        script = os.path.join(self.workdir, "notify-contact.sh")
        with open(script, "w") as f:
            f.write('#!/bin/sh\nprintf \'%s\\t%s\\t%s\\n\' "$TRACKME_CONTACT_NAME" "$TRACKME_ALERT_ID" "$TRACKME_LINK" >> ' + self.links + "\n")
        os.chmod(script, 0o755)
        return script

    def contact_links(self):
        if not os.path.exists(self.links):
            return []
        with open(self.links) as f:
            return [line.rstrip("\n").split("\t") for line in f if line.strip()]

    def contact_flow(self, server, browser):
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "finn", "password": "correct horse battery", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        # Told only when nobody acknowledges (not at the raise, the SOS button's default): this
        # flow is the escalation's.
        cy = Device(server, "pi-0003", {"name": "Cy <b>Twombly</b>", "age": 77, "tell_contacts_at_raise": False, "contacts": [
            {"name": "Ben", "relation": "son", "phone": "+39 555 0101"}, {"name": "Cleo", "relation": "neighbour", "phone": "+39 555 0102"}]})
        cy.alert("alert-cy", 0, kind="manual")
        state = {}

        def first_contact_told():
            links = wait_for(lambda: self.contact_links(), timeout=30, what="the notifier to run for the first contact")
            assert [(name, alert) for name, alert, _ in links] == [("Ben", "alert-cy")], links
            state["link"] = links[0][2]
        self.check("an alert nobody acknowledges reaches the first emergency contact with a link", first_contact_told)

        def confirms_once():
            link = state["link"]
            assert link.startswith(server.base + "/contact/"), link
            browser.get(link)
            wait_for(lambda: browser.find_all("#confirm"), what="the contact's page")
            page = browser.find("body").text
            assert "Cy <b>Twombly</b>" in page, page
            assert browser.find_all("body b") == [], "the person's name became markup on the contact's page"
            self.shot(browser, "05-contact-link")
            browser.find("#confirm").click()
            wait_for(lambda: browser.find_all("#confirmed"), what="the confirmation")
            status, detail = http(server.base, "GET", "/v1/alerts/alert-cy", token=dispatcher_token(server))
            assert status == 200 and detail["alert"]["acknowledged_by"].startswith("contact:Ben"), detail
            # The same link again: used; through the page and straight at the endpoint.
            browser.get(link)
            wait_for(lambda: "already confirmed" in browser.find("h1").text, what="the used link refused")
            assert browser.find_all("#confirm") == []
            status, _ = http(server.base, "POST", link[len(server.base):])
            assert status == 410, status
            ack = cy.batch()
            assert ack["acknowledged_alerts"] == ["alert-cy"], ack
        self.check("the contact's link confirms receipt once and only once; that counts as the acknowledgement", confirms_once)

        def forged_refused():
            link = state["link"]
            forged = link[:-1] + ("0" if link[-1] != "0" else "1")
            browser.get(forged)
            wait_for(lambda: "not valid" in browser.find("h1").text, what="the forged link refused")
            status, _ = http(server.base, "POST", forged[len(server.base):])
            assert status == 403, status
            # Another alert's id in a link signed for this one.
            status, _ = http(server.base, "GET", "/contact/" + "x" * 40 + "." + "0" * 64)
            assert status == 403, status
        self.check("a forged contact link is refused", forged_refused)

    def cut_flow(self, server, proxy, browser):
        """The dispatcher's network dies without the browser being told, while a device raises an
        alert: the page must say it is not connected, and show the alert once the network is back."""
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "ivy", "password": "correct horse battery", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        device = Device(server, "pi-0300", {"name": "Ines Ek", "age": 79})
        banner = lambda: browser.find("#feed-banner")  # noqa: E731

        def live_through_proxy():
            self.sign_in(browser, proxy.base, "ivy", "correct horse battery")
            wait_for(lambda: browser.find("#console").displayed(), what="the console")
            wait_for(lambda: browser.find("#feed-status").text == "live", what="the live feed")
            assert not banner().displayed()
        self.check("the console through a proxy that can cut the network silently is live", live_through_proxy)

        def silent_cut():
            proxy.cut()
            device.alert("alert-cut", 0)  # straight to the server: the device's network is fine
            wait_for(lambda: banner().displayed() and banner().text.startswith("Not connected since"), timeout=15,
                     what="the not-connected banner within 15 s of a silent cut")
            assert banner().text.endswith("alerts may be missing"), banner().text
            assert banner().attribute("role") == "alert"
            assert browser.find("#feed-status").text == "not connected", browser.find("#feed-status").text
            assert self.card(browser, "alert-cut") is None
            assert browser.find("#board").text == "No open alerts known: not connected.", browser.find("#board").text
            self.shot(browser, "08-not-connected")
        self.check("a silent cut: the page says 'not connected since …', never 'live'", silent_cut)
        self.look(browser, "console-not-connected", "the console with the not-connected banner")

        def back():
            # The page may be waiting out a reconnect attempt: it still sees the alert at once.
            wait_for(lambda: browser.script("return document.body.dataset.feed") == "not connected", what="the page down")
            reads = proxy.board_reads()
            proxy.restore()
            wait_for(lambda: self.card(browser, "alert-cut"), timeout=2, interval=0.02, what="the alert within 2 s of the network's return")
            wait_for(lambda: browser.find("#feed-status").text == "live" and not banner().displayed(), what="live again, banner gone")
            wait_for(lambda: self.card(browser, "alert-cut").find(".person-name").text == "Ines Ek", what="the wearer's name on the card")
            # Not only the feed's replay: the board itself is read again on the reconnect.
            wait_for(lambda: proxy.board_reads() > reads, what="the open alerts read again after the reconnect")
        self.check("the network returns: the alert raised meanwhile is on the board within 2 s, and the page is live", back)

    def desk_flow(self, server, tiles, browser):
        """The card as a dispatcher works it: an alarm that repeats until acknowledged and says when
        the browser muted it, desktop notifications, a title naming who and what, the position with a
        maps link and on tiles, contacts to call, what they were told in words, untrusted device times
        said as such, Enter adds a note, Resolve asks for an outcome and a yes, all at 390 px."""
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "jo", "password": "correct horse battery", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        anna = Device(server, "pi-0400", {"name": "Anna Berg", "age": 80, "contacts": [{"name": "Ben", "relation": "son", "phone": "+39 555 0101"}]})
        body = lambda name: browser.script(f"return document.body.dataset.{name} || null")  # noqa: E731
        prompt = lambda: browser.find("#sound-prompt")  # noqa: E731

        def alarm_repeats():
            self.sign_in(browser, server.base, "jo", "correct horse battery")
            wait_for(lambda: browser.find("#console").displayed(), what="the console")
            wait_for(lambda: browser.find("#feed-status").text == "live", what="the live feed")
            # Signing in was a click: the browser lets the page sound.
            wait_for(lambda: body("sound") == "on", what="sound on after the sign-in click")
            assert not prompt().displayed()
            browser.grant(server.base, "notifications")
            anna.alert("alert-anna", 0, kind="heart_rate_high", lat=45.4642, lon=9.19)
            wait_for(lambda: self.card(browser, "alert-anna"), what="the alert card")
            wait_for(lambda: browser.title == "SOS: Anna Berg — heart rate high", what="the title naming the person and the kind")
            assert body("alarm") == "ringing"
            wait_for(lambda: int(body("alarmsPlayed") or 0) >= 2, timeout=20, what="the alarm sounding again while nobody acknowledged")
            wait_for(lambda: int(body("notified") or 0) >= 1, what="a desktop notification")
        self.check("an unacknowledged alert: the alarm repeats, a desktop notification, the title names who and what", alarm_repeats)

        def sound_after_reload():
            browser.get(server.base + "/")
            wait_for(lambda: browser.find("#console").displayed(), what="the console after a reload")
            wait_for(lambda: prompt().displayed() and body("sound") == "blocked", what="the 'Enable sound' prompt after a reload")
            wait_for(lambda: body("alarm") == "ringing", what="the alarm due for the unacknowledged alert after the reload")
            assert body("alarmsPlayed") is None, f"the page says it played {body('alarmsPlayed')} alarms while muted"
            self.shot(browser, "09-enable-sound")
            # A keyboard-only dispatcher: Enter on the button.
            browser.find("#sound-enable").send_keys("\ue007")
            wait_for(lambda: body("sound") == "on" and not prompt().displayed(), what="sound on after Enter on 'Enable sound'")
            wait_for(lambda: int(body("alarmsPlayed") or 0) >= 1, timeout=20, what="the alarm sounding after sound was enabled")
        self.check("after a reload the browser mutes the page: 'Enable sound' shows, and Enter on it brings the alarm back", sound_after_reload)
        self.look(browser, "console-card", "an open alert's card with its alarm")

        def position():
            card = self.card(browser, "alert-anna")
            link = card.find(".alert-position a.open-map")
            assert link.attribute("href") == "https://www.openstreetmap.org/?mlat=45.46420&mlon=9.19000#map=17/45.46420/9.19000", link.attribute("href")
            assert link.text == "Open in maps"
            wait_for(lambda: browser.script(
                "return Array.from(document.querySelectorAll('#map-alert-anna img.leaflet-tile')).filter((i) => i.complete && i.naturalWidth > 0).length") > 0,
                what="map tiles from --tile-url under the card's track")
            assert tiles.requests, "no tile was asked for"
            assert browser.find_all("#map-alert-anna path.leaflet-interactive"), "no track or position marker on the map"
        self.check("the position as coordinates with an 'Open in maps' link, and on the map with --tile-url", position)

        def contacts_and_timeline():
            card = self.card(browser, "alert-anna")
            call = card.find(".contacts a.contact-call")
            assert call.attribute("href") == "tel:+395550101" and call.text == "+39 555 0101", (call.attribute("href"), call.text)
            # The notifier runs for Ben a second after the alert opened unacknowledged.
            wait_for(lambda: "contact told" in self.card(browser, "alert-anna").find(".timeline").text, timeout=30, what="the contact's notification on the timeline")
            card = self.card(browser, "alert-anna")
            assert "contact told" in card.find(".contacts").text, card.find(".contacts").text
            for code in ("contact_notified", "contact_notifying", "first_critical", "heart_rate_high"):
                assert code not in card.text, f"{code} shown as a code: {card.text}"
            anna.boot = str(uuid.uuid4())
            anna.alert("alert-anna-2", 0, kind="manual", trusted=False)
            second = wait_for(lambda: self.card(browser, "alert-anna-2"), what="the alert of a device without a set clock")
            wait_for(lambda: "device clock not set" in second.find('.timeline li[data-event="raised"]').text, what="the untrusted time said as such")
            assert "1970" not in self.card(browser, "alert-anna-2").text
            # Placed by the device's uptime: first critical 5 s before the raise, sent at the raise.
            wait_for(lambda: self.card(browser, "alert-anna-2").find(".timing").text ==
                     "Reached the server 5.0 s after the first critical reading, 0.0 s after the reading that completed the rule "
                     "(device clock not set: see the timeline).",
                     what="both timing figures from a device whose clock was not set, placed by its uptime")
        self.check("contacts to call (tel:), what they were told in words, a device time without a set clock said as such", contacts_and_timeline)

        def note_with_enter():
            card = self.card(browser, "alert-anna")
            card.find(".note-text").send_keys("Called Ben, he is on his way\ue007")
            wait_for(lambda: [n.text for n in self.card(browser, "alert-anna").find_all(".note-body")] == ["Called Ben, he is on his way"], what="the note added by Enter")
            assert self.card(browser, "alert-anna").find(".note-text").property("value") == ""
        self.check("Enter in the note field adds the note", note_with_enter)

        def narrow():
            browser.viewport(390, 844, True)
            try:
                browser.settle()
                browser.script("window.scrollTo(0, 0)")
                card = 'article.alert-card[data-alert-id="alert-anna"]'
                browser.script("document.querySelector(arguments[0]).scrollIntoView({block: 'start'})", card)
                for button in (".ack", ".resolve"):
                    box = browser.script("const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]", card + " " + button)
                    assert box[0] >= 0 and box[2] <= 390 and box[1] >= 0 and box[3] <= 844, f"{button} is off the 390x844 screen at {box}"
                overflow = browser.script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                assert overflow <= 1, f"the page scrolls sideways by {overflow} px at 390 px"
                self.shot(browser, "10-card-390")
            finally:
                browser.reset_viewport()
        self.check("at 390x844 the card's Acknowledge and Resolve are on screen, with no sideways scrolling", narrow)

        def acknowledge_stops_alarm():
            self.card(browser, "alert-anna").find(".ack").click()
            self.card(browser, "alert-anna-2").find(".ack").click()
            wait_for(lambda: body("alarm") == "quiet", what="the alarm to stop once every open alert is acknowledged")
            assert not browser.title.startswith("SOS"), browser.title
        self.check("acknowledging every open alert stops the alarm", acknowledge_stops_alarm)

        def resolve_needs_outcome_and_yes():
            card = self.card(browser, "alert-anna")
            card.find(".resolve").click()
            wait_for(lambda: self.card(browser, "alert-anna").find(".resolve-message").text == "Choose the outcome first.", what="the outcome asked for")
            assert browser.script("return document.activeElement.classList.contains('resolve-outcome')")
            status, detail = http(server.base, "GET", "/v1/alerts/alert-anna", token=dispatcher_token(server))
            assert status == 200 and detail["alert"]["open"], detail
            card.find('.resolve-outcome option[value="wearer_safe"]').click()
            card.find(".resolve").click()
            text = browser.dialog_text()
            assert "Anna Berg" in text and "Wearer safe" in text, text
            browser.dismiss_dialog()
            status, detail = http(server.base, "GET", "/v1/alerts/alert-anna", token=dispatcher_token(server))
            assert detail["alert"]["open"], "a dismissed confirmation resolved the alert"
            self.card(browser, "alert-anna").find(".resolve").click()
            browser.accept_dialog()
            wait_for(lambda: self.card(browser, "alert-anna") is None, what="the card to leave the board")
            status, detail = http(server.base, "GET", "/v1/alerts/alert-anna", token=dispatcher_token(server))
            assert detail["alert"]["outcome"] == "wearer_safe", detail["alert"]
        self.check("Resolve has no default outcome, asks for one, and confirms before closing", resolve_needs_outcome_and_yes)

    def agent_flow(self, server, browser, agent):
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "gus", "password": "correct horse battery", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        state = {}

        def agent_alert_appears():
            self.sign_in(browser, server.base, "gus", "correct horse battery")
            wait_for(lambda: browser.find("#console").displayed(), what="the console")
            card = wait_for(lambda: self.card(browser, agent.alert_id()), timeout=240, what="the agent's alert on the board")
            state["alert"] = agent.alert_id()
            wait_for(lambda: card.find(".person-name").text == Agent.PERSON, what="the wearer's name")
            assert card.find(".alert-kind").text == "heart rate high", card.find(".alert-kind").text
            fix = wait_for(lambda: agent.status().get("gpsd", {}).get("last_fix"), what="the agent's fix")
            expected = f"{fix['lat']:.3f}"[:-1]
            wait_for(lambda: expected in self.card(browser, state["alert"]).find(".alert-position").text,
                     what=f"the agent's position ({fix['lat']:.5f}) on the card")
            self.shot(browser, "06-agent-alert")
        self.check("the real agent: a heart rate over the wearer's limit appears on the board with name and position", agent_alert_appears)

        def acknowledge_reaches_agent():
            self.card(browser, state["alert"]).find(".ack").click()
            wait_for(lambda: "acknowledged" in self.card(browser, state["alert"]).attribute("class"), what="the card acknowledged")
            wait_for(lambda: agent.alert().get("state") == "acknowledged", timeout=30, what="the agent's status to show it acknowledged")
            assert agent.alert()["alert_id"] == state["alert"], agent.alert()
        self.check("the real agent: acknowledge on the page, and the agent's status shows it acknowledged", acknowledge_reaches_agent)

        def harder_rule_updates():
            # The trace turns into a flat line: no pulse, graver than a high heart rate.
            wait_for(lambda: self.card(browser, state["alert"]).find(".alert-kind").text == "no pulse", timeout=120,
                     what="the open alert's kind to rise to no pulse")
            assert len(browser.find_all("article.alert-card")) == 1, "a harder rule opened a second alert instead of updating the first"
            assert agent.alert()["alert_id"] == state["alert"] and agent.alert()["kind"] == "no_pulse", agent.alert()
            wait_for(lambda: "heart rate high → no pulse" in self.card(browser, state["alert"]).find('.timeline li[data-event="kind_changed"]').text,
                     what="the kind change in the timeline")
            self.shot(browser, "07-agent-kind-changed")
        self.check("the real agent: a harder rule updates the open alert on the page", harder_rule_updates)

        def resolve_closes_on_device():
            card = self.card(browser, state["alert"])
            card.find('.resolve-outcome option[value="help_arrived"]').click()
            card.find(".resolve").click()
            browser.accept_dialog()
            wait_for(lambda: self.card(browser, state["alert"]) is None, what="the card to leave the board")

            def closed_on_device():
                alert = agent.alert()
                return alert.get("alert_id") != state["alert"] or alert.get("state") == "resolved"
            wait_for(closed_on_device, timeout=30, what="the agent to close the alert")
            journaled = agent.status()
            assert journaled.get("alert") is None or journaled["alert"]["alert_id"] != state["alert"] or journaled["alert"]["state"] == "resolved", journaled
        self.check("the real agent: resolve on the page, and the device's alert is closed", resolve_closes_on_device)

    def care_flow(self, server, browser):
        """Issue 20 (care): an admin sets a person's care settings on the Devices tab; they reach
        the device in its sync reply; the version it runs and its local override show on the page;
        erasing the person's data removes the device, which is then told to wipe."""
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "root", "password": "correct horse battery", "role": "admin"}, token=ADMIN)
        assert status == 201, status
        device = Device(server, "pi-0200", {"name": "Hedy", "age": 72})
        device.batch(bpm=70)

        def batch(heartbeat_extra):
            device.batch_seq += 1
            body = {"version": 1, "device_id": device.id, "batch_seq": device.batch_seq, "idempotency_key": f"{device.id}:{device.batch_seq}",
                    "dropped_by_budget": 0, "heartbeat": dict({"strap": "connected", "gpsd": "fix", "store_depth": 0, "store_bytes": 4096}, **heartbeat_extra),
                    "readings": []}
            return http(server.base, "POST", "/v1/batches", body, token=device.token, headers={"Idempotency-Key": body["idempotency_key"]})

        def set_on_page():
            self.sign_in(browser, server.base, "root", "correct horse battery")
            wait_for(lambda: browser.find("#console").displayed(), what="the console")
            browser.find('.tab[data-tab="devices"]').click()
            wait_for(lambda: browser.find_all('tr[data-device-id="pi-0200"] .care-show'), what="the device's Care button")
            browser.click('tr[data-device-id="pi-0200"] .care-show', what="a click on the device's Care button")
            wait_for(lambda: browser.find_all("#care-form"), what="the care form")
            browser.find("#care-min").send_keys("52")
            browser.find("#care-max").send_keys("150")
            browser.find('.care-rule[data-rule="contact_lost"]').click()
            browser.find("#care-contacts").send_keys("Ines; daughter; +1 555 0100")
            browser.find("#care-save").click()
            wait_for(lambda: "Saved version 1" in browser.find("#care-message").text, what="the saved version")
            status, view = http(server.base, "GET", "/v1/devices/pi-0200/care-settings", token=ADMIN)
            assert status == 200, (status, view)
            settings = view["settings"]
            assert settings["min_hr"] == 52 and settings["max_hr"] == 150, settings
            assert settings["rules"]["contact_lost"] is False and settings["rules"]["no_pulse"] is True, settings
            assert settings["contacts"][0] == {"name": "Ines", "relation": "daughter", "phone": "+1 555 0100"}, settings
        self.check("care settings: an admin sets thresholds, rule switches and contacts on the Devices tab", set_on_page)

        def reach_device():
            status, ack = batch({})
            assert status == 200 and ack["orders"]["care_settings"]["version"] == 1, (status, ack)
            status, ack = batch({"care_version": 1, "care_conflicts": ["heart_rate_low.threshold_bpm"]})
            assert status == 200 and "orders" not in ack, (status, ack)
            browser.click('tr[data-device-id="pi-0200"] .care-show', what="a click on the device's Care button")
            wait_for(lambda: "runs version 1" in browser.find("#care-running").text, what="the version the device runs")
            assert "heart_rate_low.threshold_bpm" in browser.find("#care-conflicts").text
            self.shot(browser, "05-care-settings")
        self.check("care settings reach the device in its sync reply; the version it runs and its local override show", reach_device)

        def protection():
            status, _ = batch({"care_version": 1, "monitoring_paused": True, "store_state": "memory_only", "quarantined": 3,
                               "device_battery_pct": 4, "device_power": "battery", "device_power_level": "critical",
                               "conditions_for_s": {"monitoring_paused": 60, "store_memory_only": 600, "quarantined": 7200}})
            assert status == 200, status
            browser.find('.tab[data-tab="devices"]').click()
            row = 'tr[data-device-id="pi-0200"]'
            wait_for(lambda: "monitoring paused" in browser.find(row + " .device-state").text, what="the paused watch on the device list")
            state = browser.find(row + " .device-state").text
            assert "store in memory only for 10 min" in state and "device battery critical" in state, state
            assert "3 damaged readings set aside for 2 h" in state, state
            assert browser.find(row + " .device-power").text == "on battery 4%", browser.find(row + " .device-power").text
            # The care setting discreet_sos: the wearer's device shows nothing of alerts, and the list says so.
            status, view = http(server.base, "GET", "/v1/devices/pi-0200/care-settings", token=ADMIN)
            assert status == 200, (status, view)
            settings = dict(view["settings"], discreet_sos=True)
            settings.pop("version", None)
            status, stored = http(server.base, "PUT", "/v1/devices/pi-0200/care-settings", settings, token=ADMIN)
            assert status == 200 and stored["discreet_sos"] is True, (status, stored)
            browser.find('.tab[data-tab="devices"]').click()
            wait_for(lambda: "discreet SOS" in browser.find(row + " .device-state").text, what="the discreet SOS badge on the device list")
            self.shot(browser, "05b-device-protection")
        self.check("the device list shows what leaves the wearer unprotected: paused, memory-only store and damaged readings with how long, device battery critical, discreet SOS", protection)

        def erase():
            browser.find("#care-erase").click()
            browser.answer_prompt("pi-0200")
            wait_for(lambda: "Erased pi-0200" in browser.find("#care-message").text, what="the erasure")
            wait_for(lambda: not browser.find_all('tr[data-device-id="pi-0200"]'), what="the device to leave the list")
            status, _ = http(server.base, "GET", "/v1/devices/pi-0200/care-settings", token=ADMIN)
            assert status == 404, status
            status, answer = batch({})
            assert status == 410 and answer["orders"]["wipe"]["ordered_ms"] > 0, (status, answer)
        self.check("erasing a person's data on the page: the device is gone and is told to wipe", erase)

    def expiry_flow(self, server, browser):
        status, _ = http(server.base, "POST", "/v1/accounts", {"username": "eve", "password": "correct horse battery", "role": "dispatcher"}, token=ADMIN)
        assert status == 201
        device = Device(server, "pi-0009", {"name": "Cy", "age": 70})
        device.batch(bpm=70)
        self.sign_in(browser, server.base, "eve", "correct horse battery")
        wait_for(lambda: browser.find("#console").displayed(), what="the console")
        browser.find('.tab[data-tab="devices"]').click()
        wait_for(lambda: "SILENT" in browser.find('tr[data-device-id="pi-0009"]').text, timeout=30, what="the device marked silent")
        self.shot(browser, "04-devices-silent")
        # The session lasts 8 s; the feed ends at the next tick after expiry and the page asks to sign in.
        wait_for(lambda: browser.find("#signin").displayed(), timeout=30, what="sign-in after the session expired")
        assert "sign in again" in browser.find("#signin-message").text.lower(), browser.find("#signin-message").text


_dispatcher_tokens = {}


def dispatcher_token(server):
    if server.base not in _dispatcher_tokens:
        status, body = http(server.base, "POST", "/v1/dispatchers", {}, token=ADMIN)
        assert status == 201, (status, body)
        _dispatcher_tokens[server.base] = body["token"]
    return _dispatcher_tokens[server.base]


if __name__ == "__main__":
    sys.exit(ConsoleTest.main("agent"))
