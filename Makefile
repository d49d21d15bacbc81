# The README's two commands: `make demo` (the main job) and `make test` (the tests).
# Both install the Debian packages they need first (root on Debian bookworm).

SWIFT ?= swift

.PHONY: deps build demo test

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
