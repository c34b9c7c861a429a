# Two commands do everything on a fresh Debian machine, as root:
#   make acceptance   run the suite against the bundled server with the reference pipeline
#   make test         the project's own tests
# Both install what they need first (make deps) or say exactly what is missing.

GO        ?= go
BIN       := bin/acceptance
WHEELS    := .cache/wheels
# The one package the reference pipeline's install step asks the (stub) package index for.
WHEEL_PKG := tabulate==0.9.0
ARGS      ?=

.PHONY: all deps build acceptance test test-short bench update-baselines clean

all: build

deps:
	@bash .ci/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/acceptance

acceptance: deps build
	./$(BIN) run $(ARGS)

# The SDK compatibility tests find the pinned official SDKs that make deps installs; the egress
# end-to-end test (its own network namespace, real pip/python clients) runs too.
SDK_ENV := OSB_SDK_REQUIRED=1 OSB_EGRESS_NETNS_E2E=1 OSB_JS_SDK_DIR=$(CURDIR)/mock-server/testdata/sdk OSB_PY_SDK_PYTHON=$(CURDIR)/.cache/py-sdk/bin/python

test: deps
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(SDK_ENV) $(GO) test -count=1 -timeout 40m ./...; s=$$?; bash .ci/leakcheck.sh || s=1; exit $$s

test-short:
	$(GO) test -count=1 -short ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 5x -benchmem ./mock-server/... ./harness/...

# Rewrites the evidence baselines used to detect contract drift. A grading run never does this.
update-baselines: deps build
	UPDATE_BASELINES=1 ./$(BIN) run $(ARGS)

clean:
	rm -rf bin .cache
