# troupe's everyday commands. `make test` is what CI runs.
GO      ?= go
# bash, for pipefail: a benchmark that fails fails make bench.
SHELL   := /bin/bash
PKGS    ?= ./...
BENCH   ?= .
BENCHTIME ?= 1x
FUZZTIME ?= 60s
# Minimising each new interesting input may otherwise take a minute of the
# run with no fuzzing done.
FUZZMINIMIZETIME ?= 10s
# package:target pairs; go test -fuzz takes one target in one package a run.
FUZZ_TARGETS ?= ./agenttypes:FuzzYAMLDefinition ./agenttypes:FuzzMarkdownDefinition ./builtin/tools:FuzzScanMatchesNaive ./builtin/outline:FuzzParse

.PHONY: build test integration walkthrough lint staticcheck funclen bench eval fuzz run-example clean proto

# CGO_ENABLED=0: a static binary. Linked against the C library (net's
# resolver asks for it) it starts about 4 ms later, at every command.
# troupe-temporal, the helper troupe runs for runs and workers on
# Temporal, is built from the Temporal backend's own module, beside it.
build:
	CGO_ENABLED=0 $(GO) build -o bin/troupe ./cmd/troupe
	cd $(TEMPORAL_MODULE) && CGO_ENABLED=0 $(GO) build -o $(CURDIR)/bin/troupe-temporal ./cmd/troupe-temporal

# -shuffle=on: a test that passes only after another has run fails here.
# A whole run that passes leaves its wall time in bin/make-test-seconds,
# for make bench's table of targets.
test:
	@mkdir -p bin; start=$$(date +%s); \
	echo "$(GO) test -race -shuffle=on -count=1 $(PKGS)"; \
	$(GO) test -race -shuffle=on -count=1 $(PKGS) || exit $$?; \
	if [ "$(PKGS)" = "./..." ]; then \
		echo "cd $(TEMPORAL_MODULE) && $(GO) test -race -shuffle=on -count=1 ./..."; \
		(cd $(TEMPORAL_MODULE) && $(GO) test -race -shuffle=on -count=1 ./...) || exit $$?; \
		echo $$(( $$(date +%s) - start )) > bin/make-test-seconds; \
	fi

# Jaeger is a Go program: .ci/jaeger is a module of its own whose go.mod
# pins it as a tool, so its many dependencies stay out of troupe's. It is
# built once into bin/tools, named by its version (read from that go.mod);
# the build takes about 8 minutes on 2 busy cores, the first time.
JAEGER_VERSION := $(shell awk '$$1 == "github.com/jaegertracing/jaeger" { print $$2 }' .ci/jaeger/go.mod)
JAEGER = bin/tools/jaeger-$(JAEGER_VERSION)
$(JAEGER):
	@mkdir -p $(dir $@)
	cd .ci/jaeger && $(GO) build -o $(CURDIR)/$@.tmp github.com/jaegertracing/jaeger/cmd/jaeger
	mv $@.tmp $@

# The Temporal CLI, whose `temporal server start-dev` the Temporal
# backend's integration tests start on loopback. It is built once into
# bin/tools, named by its version; go install puts it in a directory of
# its own first, so an interrupted build leaves no half binary under the
# final name. With empty Go caches the build took 6 minutes on 2 busy
# cores (3 GB of caches, a 250 MB binary).
TEMPORAL_CLI_VERSION ?= v1.5.1
TEMPORAL_CLI = bin/tools/temporal-$(TEMPORAL_CLI_VERSION)
$(TEMPORAL_CLI):
	@mkdir -p $(dir $@)
	rm -rf $@.tmp
	GOBIN=$(CURDIR)/$@.tmp $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)
	mv $@.tmp/temporal $@
	rm -rf $@.tmp

# Tests against real outside programs: the MCP servers of .ci/mcp-servers,
# which builtin/mcp's client speaks to, and the MCP Inspector's
# command-line client, which drives troupe mcp serve in cmd/troupe; all
# installed from the npm registry by pinned version (npm ci, from its
# lock file). And Jaeger, which cmd/troupe sends a run's trace to and
# reads it back from. And a Temporal dev server, which the Temporal
# backend's tests start from the Temporal CLI. They carry the integration
# build tag, so make test never needs node, Jaeger or Temporal.
# manager/temporal is a module of its own (the core module does not
# depend on Temporal), which ./... from here does not reach: its tests
# run from its own directory.
MCP_SERVERS := .ci/mcp-servers
INTEGRATION_PKGS ?= ./builtin/mcp/... ./cmd/troupe/...
TEMPORAL_MODULE := manager/temporal
integration: $(JAEGER) $(TEMPORAL_CLI)
	cd $(MCP_SERVERS) && npm ci --no-audit --no-fund --loglevel=error
	TROUPE_MCP_SERVERS_BIN=$(CURDIR)/$(MCP_SERVERS)/node_modules/.bin \
	TROUPE_JAEGER_BIN=$(CURDIR)/$(JAEGER) \
	TROUPE_TEMPORAL_BIN=$(CURDIR)/$(TEMPORAL_CLI) \
		$(GO) test -race -count=1 -tags integration -run Integration $(INTEGRATION_PKGS)
	if [ -f $(TEMPORAL_MODULE)/go.mod ]; then \
		cd $(TEMPORAL_MODULE) && TROUPE_TEMPORAL_BIN=$(CURDIR)/$(TEMPORAL_CLI) \
		$(GO) test -race -count=1 -tags integration -run Integration ./...; \
	fi

# A new user's first hour, as CI runs it (.ci/walkthrough): on a fresh
# clone of the last commit (uncommitted changes are not in it), with empty
# Go caches and no API key, README.md's two commands, the example plugin
# built and loaded as its README says, and a program of another module
# built with docs/from-another-module.md's recipes. It needs the module
# proxy. On 2 busy cores it took 14 minutes: 9 for make test, 3 to 4 for
# the first go run, which builds troupe with empty caches, and 15 s for the rest.
# WALKTHROUGH_FLAGS=--skip-make-test leaves make test out.
WALKTHROUGH_FLAGS ?=
walkthrough:
	bash .ci/walkthrough $(WALKTHROUGH_FLAGS)

# The linters are pinned, and installed into bin/tools by the targets that
# use them: a fresh machine fetches them from the module proxy.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK = bin/tools/staticcheck-$(STATICCHECK_VERSION)
# No function of these directories' code (tests and generated files
# aside) may be longer than FUNCLEN_LIMIT lines: make lint (and make
# funclen alone) fails on one that is.
FUNCLEN_DIRS ?= manager agenttypes plugins sdk builtin
FUNCLEN_LIMIT ?= 80
FUNCLEN = bin/tools/funclen

lint: $(STATICCHECK) $(FUNCLEN)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS) ./.ci/funclen ./.ci/benchtable
	$(GO) vet -tags integration $(INTEGRATION_PKGS)
	$(GO) test -count=1 ./.ci/funclen ./.ci/benchtable
	$(STATICCHECK) $(PKGS)
	$(FUNCLEN) -limit $(FUNCLEN_LIMIT) $(FUNCLEN_DIRS)
	$(LINT_TEMPORAL_MODULE)

# manager/temporal, a module of its own, is vetted and checked from its
# own directory, integration tests included (the tag adds files, removes none).
define LINT_TEMPORAL_MODULE
if [ -f $(TEMPORAL_MODULE)/go.mod ]; then \
	cd $(TEMPORAL_MODULE) && $(GO) vet -tags integration ./... && \
	$(CURDIR)/$(STATICCHECK) -tags integration ./...; \
fi
endef

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)
	$(LINT_TEMPORAL_MODULE)

funclen: $(FUNCLEN)
	$(FUNCLEN) -limit $(FUNCLEN_LIMIT) $(FUNCLEN_DIRS)

$(STATICCHECK):
	GOBIN=$(CURDIR)/bin/tools $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/tools/staticcheck $@

# Rebuilt every time: go build does nothing when the source is unchanged.
.PHONY: $(FUNCLEN)
$(FUNCLEN):
	$(GO) build -o $@ ./.ci/funclen

# Benchmarks that time many small calls and report percentiles run many
# times; grep runs ten times over its tree; the large workloads (2,000 or
# 10,000 agents an iteration) once. Every figure is then printed again as
# two tables: the targets (.ci/benchtable/targets.go), each beside what the
# same run measured next to it, then every figure, benchmark by benchmark;
# see docs/benchmarks.md for the last run. The Temporal backend's
# benchmarks (agents in process and on 1 to 3 worker processes, a cancel)
# run on a dev server from the Temporal CLI, built once into bin/tools.
BENCH_CALLS ?= ^Benchmark(Spawn|StepOverhead|EventJSON|ReadDir|ColdStart|ColdStartChecked|ToolCall|LoopStep|Boundary|HookInProcess|HookOutOfProcess|ToolInProcess|ToolOutOfProcess|StdioCall)$$
BENCH_GREP  ?= ^BenchmarkGrep$$
bench: $(TEMPORAL_CLI)
	@set -eo pipefail; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	$(GO) test -run '^$$' -bench '$(BENCH_CALLS)' -benchtime 2000x -benchmem $(PKGS) | tee -a "$$out"; \
	$(GO) test -run '^$$' -bench '$(BENCH_GREP)' -benchtime 10x -benchmem ./builtin/tools | tee -a "$$out"; \
	$(GO) test -run '^$$' -bench '$(BENCH)' -skip '$(BENCH_CALLS)|$(BENCH_GREP)' -benchtime $(BENCHTIME) -benchmem $(PKGS) | tee -a "$$out"; \
	(cd $(TEMPORAL_MODULE) && TROUPE_TEMPORAL_BIN=$(CURDIR)/$(TEMPORAL_CLI) $(GO) test -tags integration -run '^$$' -bench 'Integration(Agents|Cancel)' -benchtime 20x .) | tee -a "$$out"; \
	echo; $(GO) run ./.ci/benchtable -test-seconds bin/make-test-seconds "$$out"; \
	echo; echo '| benchmark | figure | value |'; echo '|---|---|---|'; \
	awk '/^Benchmark/ { name = $$1; sub(/-[0-9]+$$/, "", name); for (i = 3; i < NF; i += 2) printf "| %s | %s | %s |\n", name, $$(i+1), $$i }' "$$out"

# Scores the offline retrieval model on testdata/eval/offline.jsonl:
# top-1 file, top-5 file, top-5 lines and the median time a question.
# EVAL_VERBOSE=1 lists each miss. First it fetches the trees that
# questions name by package (npm:, deb:; see testdata/eval/README.md) into
# EVAL_CACHE, keeping those already there; a tree it cannot fetch has its
# questions skipped.
EVAL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/troupe-eval
eval:
	bash testdata/eval/fetch-trees.sh "$(EVAL_CACHE)" || echo "eval: some trees could not be fetched; their questions are skipped"
	TROUPE_EVAL_CACHE="$(EVAL_CACHE)" TROUPE_EVAL_VERBOSE=$(EVAL_VERBOSE) $(GO) test -run '^$$' -bench '^BenchmarkOfflineEval$$' -benchtime 1x ./builtin/offline

# Runs each fuzz target for FUZZTIME, one after the other. A run that ends
# with "context deadline exceeded" and writes no failing input is Go's own
# race at the -fuzztime deadline (go.dev/issue/75804), not
# a failure of the target; it is reported and passed over.
fuzz:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; corpus=$$pkg/testdata/fuzz/$$name; \
		before=$$(ls "$$corpus" 2>/dev/null | wc -l); \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		{ rc=0; $(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) || rc=$$?; echo $$rc >"$$tmp/rc"; } 2>&1 | tee "$$tmp/log"; \
		if [ "$$(cat "$$tmp/rc")" != 0 ]; then \
			after=$$(ls "$$corpus" 2>/dev/null | wc -l); \
			if [ "$$after" = "$$before" ] && grep -q 'context deadline exceeded' "$$tmp/log"; then \
				echo "fuzz $$name: stopped by Go's fuzztime deadline race (go.dev/issue/75804); no failing input, so not a failure"; \
			else exit 1; fi; \
		fi; \
	done

run-example: build
	./bin/troupe run explore --repo . "where are budgets enforced?"

# The plugin protocol's Go code is generated and committed; `make proto`
# regenerates it after a change to the .proto file. It needs protoc
# (Debian: apt-get install protobuf-compiler); the Go generators are
# installed at the pinned versions into bin/proto.
PROTOC ?= protoc
PROTOC_GEN_GO_VERSION ?= v1.36.12
PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2
PROTO_DIR = sdk/wire/proto
PROTO_FILES = troupe/plugin/v1/plugin.proto

proto:
	GOBIN=$(CURDIR)/bin/proto $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(CURDIR)/bin/proto $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	cd $(PROTO_DIR) && $(PROTOC) -I . \
		--plugin=protoc-gen-go=$(CURDIR)/bin/proto/protoc-gen-go \
		--plugin=protoc-gen-go-grpc=$(CURDIR)/bin/proto/protoc-gen-go-grpc \
		--go_out=paths=source_relative:. --go-grpc_out=paths=source_relative:. \
		$(PROTO_FILES)

clean:
	rm -rf bin
