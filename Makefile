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
COMMA     := ,
# make test keeps the go test -json stream here (.ci/slowest prints failures and the 20 slowest tests from it).
# ./.ci/slowest is named, not ./.ci/...: go's ... patterns skip directories that start with a dot (it matched nothing).
TEST_JSON ?= bin/test.json
# When this make started (make test's closing line states the time since, make deps included).
MAKE_START := $(shell date +%s)

.PHONY: all deps build rubric acceptance test test-e2e test-hostile test-short calibrate bench bench-grade update-baselines clean docker-engine docker-engine-stop acceptance-docker test-docker fidelity generate image gradescope-zip test-image

all: build

deps:
	@bash .ci/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/acceptance

# The rubric index (docs/rubric.md): every entry's scenarios and the Go functions of their steps.
# Regenerate it when the rubric, a feature or a step changes; cmd/acceptance TestRubricIndexGolden checks it.
rubric:
	$(GO) run ./cmd/acceptance rubric --format md > docs/rubric.md

# Every generated index, after a change to what it is generated from (docs/maintaining.md, "Add a drill"): the
# rubric index, the bundled server's admin route lists (doc.go, README.md), the calibration set's table, the
# student-with-a-flaw members' READMEs and FLAWS.md, the report goldens built from the course, the fidelity ledger.
# Review the diff before committing it.
generate: rubric fidelity
	$(GO) test -count=1 ./mock-server/ -run '^TestAdminRoutesAreDocumented$$' -update
	$(GO) test -count=1 ./fixtures/submissions/ -run '^TestGeneratedIndexes$$' -update
	$(GO) test -short -count=1 ./harness/report/render/ ./harness/report/classreport/ -update

acceptance: deps build
	./$(BIN) run $(ARGS)

# The SDK compatibility tests find the pinned official SDKs that make deps installs; the egress
# end-to-end test (its own network namespace, real pip/python clients) runs too.
SDK_ENV := OSB_SDK_REQUIRED=1 OSB_EGRESS_NETNS_E2E=1 OSB_JS_SDK_DIR=$(CURDIR)/mock-server/testdata/sdk OSB_PY_SDK_PYTHON=$(CURDIR)/.cache/py-sdk/bin/python

# Every tier: gofmt and vet, every package's tests (non-short) and the e2e tier (every theme, hostile included),
# the leak check, then the docker slice (not measured if no engine starts); it ends with its total time.
test: deps
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./... && $(GO) vet -tags e2e ./cmd/acceptance/
	@mkdir -p bin; rm -f bin/failed.txt
	{ $(SDK_ENV) $(GO) test -count=1 -timeout 40m -json ./... ./.ci/slowest/; $(SDK_ENV) GO=$(GO) bash .ci/e2e.sh; } | tee $(TEST_JSON) | $(GO) run ./.ci/slowest -n 20 -summary bin/failed.txt; s=$$?; \
	  bash .ci/leakcheck.sh || { s=1; echo "  the leak check (above)" >> bin/failed.txt; }; \
	  $(MAKE) --no-print-directory test-docker DOCKER_OPTIONAL=1 || { s=1; echo "  the docker slice (above)" >> bin/failed.txt; }; \
	  [ ! -s bin/failed.txt ] || { echo; echo "make test, again at its end:"; cat bin/failed.txt; }; \
	  t=$$(( $$(date +%s) - $(MAKE_START) )); echo "make test: $$((t/60))m$$((t%60))s in total (exit $$s)"; exit $$s

# The end-to-end tier alone: every theme of cmd/acceptance/e2e_<theme>_*_test.go (build tag e2e, hostile included),
# one process per theme, E2E_JOBS side by side; E2E_THEMES="run flaky" picks themes. make test runs it too.
test-e2e: deps
	@mkdir -p bin
	$(SDK_ENV) GO=$(GO) bash .ci/e2e.sh | tee bin/e2e.json | $(GO) run ./.ci/slowest -n 20

# The hostile theme alone (TestHostileCalibration and the other e2e_hostile_* tests, docs/hostile.md); make test runs it too.
test-hostile: deps
	@mkdir -p bin
	$(SDK_ENV) GO=$(GO) E2E_THEMES=hostile bash .ci/e2e.sh | tee bin/e2e-hostile.json | $(GO) run ./.ci/slowest -n 20

# A quick calibration of some entries (docs/maintaining.md, "Add a drill"): TestCalibration grading only the
# reference, the student and the members that must fail a tagged entry, on the tagged scenarios alone, e.g.
# make calibrate TAGS=@drill:D5 (or TAGS="@drill:D2,@criterion:network"). Minutes, not the whole set's 12+.
calibrate: deps
	@test -n "$(TAGS)" || { echo "make calibrate needs TAGS, e.g. TAGS=@drill:D5"; exit 2; }
	ACCEPTANCE_CALIBRATE_TAGS='$(TAGS)' $(GO) test -tags e2e -count=1 -timeout 30m -run '^TestCalibration$$' -v ./cmd/acceptance/

# The fast tier: every package's tests with -short, no e2e tier, no sandbox, browser, pandas or make deps; a fresh
# clone with only Go passes it in about 2 minutes.
test-short:
	$(GO) test -count=1 -short ./... ./.ci/slowest/

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 5x -benchmem ./mock-server/... ./harness/...

# Grading throughput (takes minutes, starts real sandboxes): N submissions of the calibration set in one
# `acceptance grade --parallel PARALLEL` call against the same N graded one by one (BenchmarkGradeClass).
bench-grade: deps
	ACCEPTANCE_BENCH_N=$(or $(N),4) ACCEPTANCE_BENCH_PARALLEL=$(or $(PARALLEL),2) \
		$(GO) test -tags e2e -run '^$$' -bench BenchmarkGradeClass -benchtime 1x -timeout 3h -v ./cmd/acceptance/

# Rewrites the evidence baselines used to detect contract drift. A grading run never does this.
update-baselines: deps build
	UPDATE_BASELINES=1 ./$(BIN) run $(ARGS)

clean:
	rm -rf bin .cache

# ---- The real OpenSandbox on Docker (harness/dockertarget; README "Grading against a real OpenSandbox on Docker") ----
# The project's own Docker engine: dedicated bridge, no forwarding off it, no NAT, pulls fail fast (.ci/docker-engine.sh).
# ALLOW_PULL=1 lets it pull from registries (for upstream-built images); changing it restarts a running engine.
docker-engine:
	@OSB_DOCKER_ALLOW_PULL=$(ALLOW_PULL) bash .ci/docker-engine.sh start >/dev/null

docker-engine-stop:
	@bash .ci/docker-engine.sh stop

# Runs a command against the docker target with the engine up; stops the engine again if it started it here.
# DOCKER_OPTIONAL=1 (make test): an engine that cannot start on this kernel is reported as not measured.
DOCKER_RUN = was=$$(bash .ci/docker-engine.sh status && echo up || echo down); \
	eval "$$(OSB_DOCKER_ALLOW_PULL=$(ALLOW_PULL) bash .ci/docker-engine.sh start)" && export DOCKER_HOST || { \
	  if [ "$(DOCKER_OPTIONAL)" = 1 ]; then echo "docker target: NOT MEASURED, the engine did not start (see above)"; exit 0; fi; exit 2; }; \
	( $(1) ); s=$$?; \
	[ "$$was" = up ] || bash .ci/docker-engine.sh stop; exit $$s

# The full suite (reference pipeline by default) against opensandbox-server==$(SERVER_VERSION) on Docker.
SERVER_VERSION ?= 1.1.1
acceptance-docker: deps build
	@$(call DOCKER_RUN,./$(BIN) run --target docker --server-version $(SERVER_VERSION) $(ARGS))

# CI slice (.ci/test-docker.sh): M0, M1 and M2 against the docker target (images built or reused), gated on the
# reference's verdicts (.ci/docker-slice-gate.py: each passed; not measured only for a documented real-target limit),
# then the network-safety test and the careless-reap test (two submissions at once, e2e tier) on the same engine;
# the engine is stopped again if it was started for this.
test-docker: deps build
	@BIN=$(BIN) GO=$(GO) SERVER_VERSION=$(SERVER_VERSION) DOCKER_OPTIONAL=$(DOCKER_OPTIONAL) ARGS="$(ARGS)" bash .ci/test-docker.sh

# The fidelity ledger (harness/fidelity/FIDELITY.md) from the stored real-run and bundled-server baselines.
fidelity:
	$(GO) run ./cmd/acceptance fidelity

# ---- The grader as an image, Gradescope (docs/grading.md "The grader as an image", "Gradescope") ----
# The grader as an OCI image on the project's engine (or $DOCKER_HOST's), from this repository and Debian packages,
# no registry pull (.ci/image.sh): IMAGE=osb-acceptance/grader:local by default; layers cached.
IMAGE ?= osb-acceptance/grader:local
image: deps
	@IMAGE=$(IMAGE) GO=$(GO) bash .ci/image.sh >/dev/null

# The grader image and the Gradescope autograder end to end (e2e theme image; 20 to 30 minutes): the reference graded
# by the image, the autograder as Gradescope runs it, and the round-1 hostile set in the Gradescope container.
test-image: deps build
	@$(call DOCKER_RUN,OSB_DOCKER_E2E=1 $(GO) test -tags e2e -count=1 -timeout 90m -run '^(TestImageGradesReferencePrivileged|TestGradescopeAutograder|TestGradescopeHostile)$$' -v ./cmd/acceptance/)

# A Gradescope autograder, bin/gradescope/autograder.zip: setup.sh, run_autograder, a static grader (.ci/gradescope-zip.sh).
gradescope-zip: deps
	@GO=$(GO) bash .ci/gradescope-zip.sh >/dev/null
