# troupe's everyday commands. `make test` is what CI runs.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
BENCHTIME ?= 1x

.PHONY: build test lint bench fuzz run-example clean

build:
	$(GO) build -o bin/troupe ./cmd/troupe

test:
	$(GO) test -race -count=1 $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Benchmarks print their figures as tables; see README.md for the last run.
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem $(PKGS)

run-example: build
	./bin/troupe run explore --repo . "where are budgets enforced?"

clean:
	rm -rf bin
