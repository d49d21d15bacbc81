"""axe-core in the page under test: `audit(browser, what)` runs it on the page as it stands and
raises AssertionError listing every serious or critical violation. axe.min.js comes from PyPI's
axe-playwright-python (Tests/Browser/requirements.txt), which `make browser-tests` installs into
.build/browser-venv; TRACKME_AXE_JS names another copy."""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILING = ("serious", "critical")
_source = None
RUN = """
const done = arguments[arguments.length - 1];
const node = (n) => n.target.join(' ') + ' — ' + (n.failureSummary || '').replace(/\\s+/g, ' ');
const brief = (v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(node) });
axe.run(document, { resultTypes: ['violations'] })
  .then((r) => done(JSON.stringify(r.violations.map(brief))), (e) => done(JSON.stringify({ error: String(e) })));
"""


def axe_source():
    global _source
    if _source is None:
        path = os.environ.get("TRACKME_AXE_JS")
        if not path:
            found = sorted(glob.glob(os.path.join(ROOT, ".build/browser-venv/lib/python3*/site-packages/axe_playwright_python/axe.min.js")))
            if not found:
                raise AssertionError("axe.min.js not found: run `make .build/browser-venv/.installed` or set TRACKME_AXE_JS")
            path = found[-1]
        with open(path, encoding="utf-8") as f:
            _source = f.read()
    return _source


def violations(browser):
    """axe-core's violations on the current page, as (id, impact, help, [targets])."""
    if not browser.script("return typeof window.axe === 'object'"):
        browser.script(axe_source() + "\n;return true;")
    raw = browser.async_script(RUN)
    result = json.loads(raw)
    if isinstance(result, dict):
        raise AssertionError(f"axe-core did not run: {result['error']}")
    return result


def audit(browser, what):
    """Fails on any serious or critical violation on the page as it is now."""
    found = violations(browser)
    for v in found:
        if v["impact"] not in FAILING:
            print(f"     axe-core on {what}: {v['impact']} {v['id']} ({v['help']}): " + "; ".join(v["nodes"][:3]), flush=True)
    bad = [v for v in found if v["impact"] in FAILING]
    if bad:
        lines = [f"{v['impact']} {v['id']} ({v['help']}): " + "; ".join(v["nodes"][:4]) for v in bad]
        raise AssertionError(f"axe-core on {what}: " + " | ".join(lines))
