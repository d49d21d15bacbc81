# The README's two commands: `make demo` (the main job) and `make test` (the tests).
# Both install the Debian packages they need first (root on Debian bookworm).

SWIFT ?= swift
# The server's PostgreSQL backend is behind a package trait; the tests build it so that the
# same behaviour suite runs against SQLite and a real PostgreSQL.
TRAITS ?= --traits PostgreSQL
SIM = .build/debug/trackme-sim

.PHONY: deps build demo test unit-tests scenarios fuzz fuzz-long soak ble-vm browser-tests test-traits api-tools api-spec api-check \
	api-check-long test-under-load lint

deps:
	@missing=$$(for p in $$(grep -v '^#' .ci/deps.txt); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

# The main job: the demo scenario end to end (simulated strap over a socket pair, the agent's
# pipeline, SQLite store, sync to an in-process trackme-server on loopback), report and SVG in
# simulations/out/. `make demo SERVE=300` prints the dispatcher console's URL and a sign-in,
# starts the run when the console is open, and keeps the server up for 300 s (port PORT, 8080).
demo: deps
	$(SWIFT) build --product trackme-sim
	mkdir -p simulations/out
	.build/debug/trackme-sim run simulations/scenarios/demo.json --report simulations/out/demo.json --svg simulations/out/demo.svg \
		$(if $(SERVE),--serve $(SERVE) --port $(or $(PORT),8080))

test: deps test-traits lint api-spec unit-tests scenarios fuzz browser-tests api-check

# Half the behaviour suite runs against PostgreSQL only with the package trait: without it the
# tests would pass with that half missing, so `make test` refuses to run.
test-traits:
	@case "$(TRAITS)" in *PostgreSQL*) ;; \
	*) echo "make test needs the PostgreSQL trait (TRAITS='$(TRAITS)'): keep TRAITS=--traits PostgreSQL"; exit 1;; esac

# The API document's checkers (openapi-spec-validator, schemathesis) from PyPI, in a virtual
# environment of their own under .build/ so that nothing is installed into the system's Python.
API_VENV = .build/api-venv
api-tools: $(API_VENV)/.installed
$(API_VENV)/.installed: Tests/API/requirements.txt
	python3 -m venv $(API_VENV)
	$(API_VENV)/bin/pip install --quiet --disable-pip-version-check -r Tests/API/requirements.txt
	touch $@

# The API document: no key twice in any mapping, and valid OpenAPI 3.1.
api-spec: api-tools
	$(API_VENV)/bin/python Tests/API/check_openapi.py Sources/TrackMeServer/openapi.yaml

# schemathesis against a real trackme-server on loopback, as a device, a dispatcher and the
# admin: no 5xx and every documented response as the document says. Bounded (examples per
# operation and seconds per role); `api-check-long` runs longer with more examples.
API_CHECK_EXAMPLES ?= 10
API_CHECK_SECONDS ?= 60
api-check: api-spec
	$(SWIFT) build $(TRAITS) --product trackme-server
	$(API_VENV)/bin/python Tests/API/api_check.py --server .build/debug/trackme-server \
		--examples $(API_CHECK_EXAMPLES) --seconds $(API_CHECK_SECONDS)

api-check-long:
	$(MAKE) api-check API_CHECK_EXAMPLES=200 API_CHECK_SECONDS=900

# swift-format's strict lint over the whole tree, with the style guide's rules (no force unwrap,
# no force try, no implicitly unwrapped optionals). `swift format -i -r Sources Tests Package.swift`
# mends the layout findings; the rest need a person. Foundation's `Process` is refused too: its
# `run()` kills its whole parent now and then (swift-corelibs-foundation #5472), a crashed test
# suite every few runs; children start through TrackMeSystem's SpawnedProcess or ProcessRunner.
lint:
	$(SWIFT) format lint --strict -r Sources Tests Package.swift
	@if grep -rnE '(^|[^A-Za-z0-9_.])Process\(\)' Sources Tests --include='*.swift'; then \
		echo "lint: Foundation's Process above; use SpawnedProcess (a child the caller stops) or ProcessRunner (one run to its end)"; exit 1; fi

# `make test` with a CPU hog on both cores beside it (Debian's stress-ng): the suite must hold
# on a busy machine. Not part of CI.
test-under-load:
	@command -v stress-ng >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends stress-ng)
	@stress-ng --cpu 2 --quiet & hog=$$!; \
	trap 'kill $$hog 2>/dev/null; wait $$hog 2>/dev/null' EXIT; \
	started=$$(date +%s); $(MAKE) test; rc=$$?; \
	echo "test-under-load: make test exited $$rc after $$(( $$(date +%s) - started )) s beside stress-ng --cpu 2"; exit $$rc

# One process per test target: the suites start real gpsd, PostgreSQL, servers and child
# processes, and in one process together they can starve Dispatch's small thread pool on a
# 2-core machine, so each target gets a process of its own.
TEST_TARGETS = TrackMeCoreTests TrackMeSystemTests SystemLibraryTests BlueZHeartRateTests GPSDPositionTests EdgeDispatchTests \
	EdgeStoreTests EdgeSyncTests TrackMeServerTests TrackMeAgentTests TrackMeSimulationTests

# The server suites that hold a real deadline (connection caps, several instances on one
# PostgreSQL, revocation across instances, HAProxy) get a process of their own after
# the rest of TrackMeServerTests, whose 100-odd tests otherwise run beside them on 2 cores.
TIMED_SERVER_SUITES = ^TrackMeServerTests\.(ConnectionLimitTests|MultiInstanceTests|TokenLifecycleTests|ReverseProxyTests)/

# A suite's `.timeLimit` is a hang guard (10 minutes, 15 for the agent's end-to-end suites), never
# a speed check: the tests of a target run side by side on two cores, so a test's wall time holds
# its neighbours' work and, on a busy machine, everything else. `timeout 900` guards the target,
# and a target stopped by it names the tests it was still running (Tests/pending-tests.py).
# The failing tests' first lines are said again at the end: CI keeps only the end of what it printed.
unit-tests:
	$(SWIFT) build $(TRAITS) --build-tests
	@failed=""; log=$$(mktemp); summary=$$(mktemp); for t in $(TEST_TARGETS) TimedServerSuites; do \
		echo "== $$t"; \
		case $$t in \
			TrackMeServerTests) set -- --filter "^$$t\\." --skip '$(TIMED_SERVER_SUITES)';; \
			TimedServerSuites) set -- --filter '$(TIMED_SERVER_SUITES)';; \
			*) set -- --filter "^$$t\\.";; \
		esac; \
		timeout 900 $(SWIFT) test --skip-build $(TRAITS) "$$@" > $$log 2>&1; rc=$$?; cat $$log; \
		if [ $$rc -eq 124 ]; then echo "!! $$t FAILED: still running after 15 minutes (a hang), stopped" | tee -a $$summary; \
			python3 Tests/pending-tests.py $$log | head -40 | tee -a $$summary; fi; \
		if [ $$rc -ne 0 ]; then failed="$$failed $$t"; grep -E '^✘|: error: |Fatal error|crashed|exited with unexpected signal' $$log | grep -v '^✘ Suite' | head -20 | cut -c1-300 | sed "s/^/$$t: /" >> $$summary; fi; \
	done; rm -f $$log; \
	if [ -n "$$failed" ]; then echo "== what failed (the first lines of each)"; cat $$summary; rm -f $$summary; echo "unit tests failed in:$$failed"; exit 1; fi; rm -f $$summary

# Every scenario in fast mode, and the field-mode one through gpsfake; each exits non-zero if an
# expectation failed.
scenarios:
	$(SWIFT) build $(TRAITS) --product trackme-sim
	@failed=0; passed=0; \
	for s in simulations/scenarios/*.json; do \
		mode=""; case $$s in *field-*) mode=--field;; esac; \
		echo "== $$s $$mode"; \
		if $(SIM) run $$s $$mode; then passed=$$((passed+1)); else failed=$$((failed+1)); fi; \
	done; \
	echo "scenarios: $$passed passed, $$failed failed"; \
	[ $$failed -eq 0 ]

# Every fuzz target briefly (8 s each, about 4 min with the eight builds); `fuzz-long` runs each for 10 min
# and adds what it finds to the corpus kept in Tests/Fuzz/corpus/.
fuzz:
	Tests/Fuzz/run-fuzz.sh 8

fuzz-long:
	FUZZ_CORPUS_KEEP=1 Tests/Fuzz/run-fuzz.sh 600

# The crash tests at length: 1000 SIGKILL cycles of the store/sync child (make test runs 40), then
# 1000 of the real trackme-agent binary against the real trackme-server (make test runs 12).
# Figures in simulations/RELIABILITY.md.
soak:
	$(SWIFT) build $(TRAITS) --build-tests
	TRACKME_CRASH_CYCLES=1000 timeout 7200 $(SWIFT) test --skip-build $(TRAITS) --filter '^EdgeSyncTests\.CrashTests'
	TRACKME_AGENT_CRASH_CYCLES=1000 timeout 7200 $(SWIFT) test --skip-build $(TRAITS) --filter '^TrackMeAgentTests\.AgentCrashTests'

# The dispatcher console in a real browser: Debian's chromium driven by chromium-driver over the
# W3C WebDriver HTTP protocol (Tests/Browser/webdriver.py, no client library to install), against
# a real trackme-server on loopback, and the real trackme-agent (simulated strap, gpsd under
# gpsfake) whose alert the dispatcher handles. Every page is checked with axe-core (from PyPI,
# into .build/browser-venv; Tests/Browser/axe.py finds it there). Screenshots at 1366x768 and
# 390x844 in simulations/out/browser/.
BROWSER_VENV = .build/browser-venv
$(BROWSER_VENV)/.installed: Tests/Browser/requirements.txt
	python3 -m venv $(BROWSER_VENV)
	$(BROWSER_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r Tests/Browser/requirements.txt
	touch $@

browser-tests: deps $(BROWSER_VENV)/.installed
	$(SWIFT) build $(TRAITS) --product trackme-server
	$(SWIFT) build $(TRAITS) --product trackme-agent
	python3 Tests/Browser/console_test.py --server .build/debug/trackme-server --agent .build/debug/trackme-agent --out simulations/out/browser
	python3 Tests/Browser/people_test.py --server .build/debug/trackme-server --out simulations/out/browser
	python3 Tests/Browser/carer_test.py --server .build/debug/trackme-server --out simulations/out/browser
	python3 Tests/Browser/race_test.py --server .build/debug/trackme-server --out simulations/out/browser
	python3 Tests/Browser/account_test.py --server .build/debug/trackme-server --out simulations/out/browser
	python3 Tests/Browser/contact_test.py --server .build/debug/trackme-server --out simulations/out/browser

# The BLE path against a real BlueZ stack: the agent's static binary in a QEMU VM with two virtual
# LE controllers and BlueZ's btgatt-server as the strap (needs root, qemu-system-x86 and
# ../shared/tools/ble-vm; first image build a few minutes). See hardware/BLE-VM.md.
ble-vm: deps
	hardware/ble-vm/run-checks.sh
