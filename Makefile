# The README's two commands: `make demo` (the main job) and `make test` (the tests).
# Both install the Debian packages they need first (root on Debian bookworm).

SWIFT ?= swift

.PHONY: deps build demo test ble-vm

deps:
	@missing=$$(for p in $$(grep -v '^#' .ci/deps.txt); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) build -c release --product trackme-agent
	.build/release/trackme-agent --help

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The BLE path against a real BlueZ stack: the agent's static binary in a QEMU VM with two virtual
# LE controllers and BlueZ's btgatt-server as the strap (needs root, qemu-system-x86 and
# ../shared/tools/ble-vm; first image build a few minutes). See hardware/BLE-VM.md.
ble-vm: deps
	hardware/ble-vm/run-checks.sh
