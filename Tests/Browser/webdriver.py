"""A small W3C WebDriver client over plain HTTP (urllib): enough to drive Debian's chromium
through chromium-driver without a client library to install."""
import argparse
import base64
import json
import os
import socket
import subprocess
import time
import traceback
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout=15.0, interval=0.05, what="condition"):
    """Polls `predicate` until it returns a truthy value (returned) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except WebDriverError as error:  # e.g. a stale element while the page re-renders
            last_error = error
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


class CheckRun:
    """The named checks of one browser test file (the subclass sets `self.results = []`): each
    runs, reports ok or FAIL with its time, and the run goes on; `summary()` prints the count and
    gives the exit code (1 when a check failed or none ran)."""

    def check(self, name, function):
        started = time.monotonic()
        try:
            function()
            self.results.append((name, True, ""))
            print(f"ok   {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Exception as error:  # noqa: BLE001 - report every failure and go on
            self.results.append((name, False, str(error)))
            print(f"FAIL {name}: {error!r}", flush=True)
            traceback.print_exc()

    def look(self, browser, name, what=None):
        """axe-core on the page as it stands (failing on a serious or critical violation), then
        its screenshots at 1366x768 and 390x844 (`NAME-WxH.png` in `self.out`), as a check of
        its own so that the flow goes on either way."""
        from axe import audit  # noqa: PLC0415 - only the tests that look at pages need it

        def looked():
            audit(browser, what or name)
            browser.screenshots(self.out, name)
        self.check(f"accessible and laid out at 1366 and 360 px: {what or name}", looked)

    def summary(self, out):
        failed = [r for r in self.results if not r[1]]
        print(f"\n{len(self.results) - len(failed)} passed, {len(failed)} failed; screenshots in {out}")
        return 1 if failed or not self.results else 0

    @classmethod
    def main(cls, *extra):
        """The command line of a test file whose class takes (server, [extra paths...], out):
        `--server`, each of `extra` (e.g. "agent") as `--NAME` with `.build/debug/trackme-NAME`
        as default, and `--out`; returns the exit code."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--server", default=".build/debug/trackme-server")
        for name in extra:
            parser.add_argument(f"--{name}", default=f".build/debug/trackme-{name}")
        parser.add_argument("--out", default="simulations/out/browser")
        args = parser.parse_args()
        os.makedirs(args.out, exist_ok=True)
        paths = [os.path.abspath(getattr(args, name)) for name in ("server",) + extra]
        return cls(*paths, args.out).run()


class Element:
    def __init__(self, driver, ref):
        self.driver = driver
        self.ref = ref

    def _call(self, method, path, body=None):
        return self.driver._call(method, f"/element/{self.ref}{path}", body)

    def click(self):
        self._call("POST", "/click", {})

    def send_keys(self, text):
        self._call("POST", "/value", {"text": text})

    def clear(self):
        self._call("POST", "/clear", {})

    @property
    def text(self):
        return self._call("GET", "/text")

    def attribute(self, name):
        return self._call("GET", f"/attribute/{name}")

    def property(self, name):
        return self._call("GET", f"/property/{name}")

    def displayed(self):
        return self._call("GET", "/displayed")

    def find(self, css):
        return Element(self.driver, self._call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT])

    def find_all(self, css):
        return [Element(self.driver, e[ELEMENT]) for e in self._call("POST", "/elements", {"using": "css selector", "value": css})]


class Chromium:
    """chromium-driver on a free port with headless chromium; one session. `autoplay=False` keeps
    the browser's own autoplay policy (no sound until the person clicks or presses a key)."""

    def __init__(self, window=(1500, 1100), autoplay=True):
        self.port = free_port()
        self.process = subprocess.Popen(["chromedriver", f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        wait_for(self._ready, timeout=20, what="chromedriver")
        args = ["--headless=new", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window[0]},{window[1]}",
                "--autoplay-policy=" + ("no-user-gesture-required" if autoplay else "document-user-activation-required")]
        binary = "/usr/bin/chromium"
        options = {"args": args}
        if os.path.exists(binary):
            options["binary"] = binary
        value = self._raw("POST", "/session", {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}})
        self.session = value["sessionId"]

    def _ready(self):
        try:
            return self._raw("GET", "/status").get("ready")
        except (urllib.error.URLError, ConnectionError, WebDriverError):
            return False

    def _raw(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                payload = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            payload = json.loads(error.read() or b"{}")
            value = payload.get("value", {})
            raise WebDriverError(f"{method} {path}: {value.get('error')}: {value.get('message', '')[:300]}") from None
        return payload.get("value")

    def _call(self, method, path, body=None):
        return self._raw(method, f"/session/{self.session}{path}", body)

    def get(self, url):
        self._call("POST", "/url", {"url": url})

    @property
    def url(self):
        return self._call("GET", "/url")

    @property
    def title(self):
        return self._call("GET", "/title")

    def find(self, css):
        return Element(self, self._call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT])

    def click(self, css, what=None):
        """Finds `css` and clicks it, again while the page re-renders under it (a stale element)."""
        wait_for(lambda: self.find(css).click() or True, what=what or f"a click on {css}")

    def find_all(self, css):
        return [Element(self, e[ELEMENT]) for e in self._call("POST", "/elements", {"using": "css selector", "value": css})]

    def script(self, source, *args):
        return self._call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def async_script(self, source, *args):
        return self._call("POST", "/execute/async", {"script": source, "args": list(args)})

    def cookies(self):
        return self._call("GET", "/cookie")

    def answer_prompt(self, text):
        """Types into the open `window.prompt` and accepts it."""
        self._call("POST", "/alert/text", {"text": text})
        self._call("POST", "/alert/accept", {})

    def dialog_text(self):
        """The text of the open `window.confirm` or `alert`."""
        return self._call("GET", "/alert/text")

    def accept_dialog(self):
        self._call("POST", "/alert/accept", {})

    def dismiss_dialog(self):
        self._call("POST", "/alert/dismiss", {})

    def grant(self, origin, *permissions):
        """Grants `origin` browser permissions (e.g. "notifications") as if the person had allowed them."""
        self._call("POST", "/goog/cdp/execute", {"cmd": "Browser.grantPermissions", "params": {"origin": origin, "permissions": list(permissions)}})

    def screenshot(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(self._call("GET", "/screenshot")))

    def viewport(self, width, height, mobile=False):
        """Lays the page out at exactly `width` x `height` CSS pixels (DevTools' device metrics)."""
        self._call("POST", "/goog/cdp/execute", {"cmd": "Emulation.setDeviceMetricsOverride",
                                                  "params": {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}})

    def reset_viewport(self):
        self._call("POST", "/goog/cdp/execute", {"cmd": "Emulation.clearDeviceMetricsOverride", "params": {}})

    SIZES = ((1366, 768, False), (390, 844, True))

    def screenshots(self, directory, name):
        """The page at a desktop's 1366x768 and a phone's 390x844: `NAME-1366x768.png` and
        `NAME-390x844.png` in `directory`. Then checks that nothing is wider than a 360 px screen."""
        try:
            for width, height, mobile in self.SIZES + ((360, 740, True),):
                self.viewport(width, height, mobile)
                self.settle()
                if (width, height, mobile) in self.SIZES:
                    self.screenshot(os.path.join(directory, f"{name}-{width}x{height}.png"))
                if mobile:
                    overflow = self.script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                    if overflow > 1:
                        wide = self.script(
                            "const w = arguments[0]; return Array.from(document.querySelectorAll('body *'))"
                            ".filter((e) => e.getBoundingClientRect().right > w + 1 && !e.closest('.scroll'))"
                            ".slice(-3).map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.getAttribute('class') ? '.' + e.getAttribute('class') : ''))", width)
                        raise AssertionError(f"{name}: the page is {overflow} px wider than a {width} px screen: {wide}")
        finally:
            self.reset_viewport()

    def settle(self):
        """Returns after the page has laid out and painted twice (its resize handlers have run)."""
        self.async_script("const done = arguments[arguments.length - 1];"
                          "window.dispatchEvent(new Event('resize'));"
                          "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")

    def quit(self):
        try:
            self._call("DELETE", "")
        except Exception:
            pass
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
