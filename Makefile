# Conclave — run `make help` for the list of targets.

SHELL := /bin/bash
GO    ?= go
BIN   := bin/conclave
# Every test run shares one throwaway PostgreSQL cluster and one migrated
# template database (see internal/pgtest).
WITH_PG := $(GO) run ./internal/pgtest/testpg --
PKGS  := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install what a fresh machine lacks: Go modules and the PostgreSQL server binaries.
	@$(GO) mod download
	@if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -z "$$DATABASE_URL" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing PostgreSQL (apt-get install postgresql)…"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
		else \
			echo "PostgreSQL server binaries are missing: install PostgreSQL (e.g. 'sudo apt-get install postgresql') or set DATABASE_URL."; exit 1; \
		fi; \
	fi

.PHONY: build
build: ## Build the conclave binary into bin/.
	$(GO) build -o $(BIN) ./cmd/conclave

.PHONY: run
run: deps build ## Serve on the built-in defaults (managed local PostgreSQL, simulated provider) and print a demo key.
	./$(BIN) serve --demo

.PHONY: test
test: deps ## Run every test against a real PostgreSQL (one throwaway cluster for the run).
	$(WITH_PG) $(GO) test -count=1 $(PKGS)

.PHONY: test-race
test-race: deps ## Run every test with the race detector.
	$(WITH_PG) $(GO) test -race -count=1 $(PKGS)

.PHONY: lint
lint: ## gofmt, go vet and staticcheck.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt wants to change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

.PHONY: generate
generate: ## Regenerate generated code.
	$(GO) generate $(PKGS)

.PHONY: verify
verify: generate ## Check that go.mod is tidy and generated code is committed.
	$(GO) mod tidy -diff
	@git diff --exit-code -- . ':(exclude)go.sum' || { echo "generated files are out of date: run 'make generate' and commit"; exit 1; }

.PHONY: bench
bench: deps ## Run the benchmarks; each prints its figure beside its comparison.
	$(WITH_PG) $(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

.PHONY: clean
clean: ## Remove build output (keeps .data/, the local database).
	rm -rf bin
