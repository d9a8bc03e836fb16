# OceanWay Core. `make` alone prints this help.
SHELL := /bin/bash
GO ?= go
PKGS ?= ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show the targets
	@grep -hE '^[a-zA-Z/_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-14s %s\n", $$1, $$2}'

.PHONY: demo
demo: ## Run the main job: the end-to-end demo (throwaway PostgreSQL when none is given)
	@scripts/demo $(ARGS)

.PHONY: test
test: ## Run all tests on real PostgreSQL (starts a throwaway cluster if none is reachable)
	@scripts/test

.PHONY: test/race
test/race: ## Run all tests with the race detector
	@RACE=1 scripts/test

.PHONY: lint
lint: ## go vet + gofmt check + golangci-lint (pinned in tools/go.mod; .golangci.yml) + no bare SQLSTATE strings
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) run ./scripts/lintsqlstate
	@if [ -f .golangci.yml ]; then $(GO) tool -modfile=tools/go.mod golangci-lint run $(PKGS); fi

.PHONY: generate
generate: ## Regenerate committed generated files (sqlc query code, the API server from api/openapi.yaml, JSON Schema, TypeScript, goldens marked generated)
	@scripts/generate

.PHONY: dashboards
dashboards: ## Regenerate the Grafana dashboards deploy/grafana/*.json from Go (also part of generate)
	$(GO) run ./deploy/grafana/gen

.PHONY: verify
verify: generate ## Fail when generated files are stale or a guard clause has no marker or no test
	$(GO) run ./scripts/guards check
	@git diff --exit-code || (echo "generated files are stale: run make generate and commit"; exit 1)
	@untracked=$$(git ls-files --others --exclude-standard); if [ -n "$$untracked" ]; then echo "generate made untracked files:"; echo "$$untracked"; exit 1; fi

.PHONY: mutate-guards
mutate-guards: ## Disable each database guard clause in turn and run its tests: every clause must be KILLED (ARGS="-run OW019 -j 2")
	@scripts/mutate-guards $(ARGS)

.PHONY: docs/guards
docs/guards: ## Regenerate docs/guard-clauses.md (guard clause → live definition → tests) from the markers and the tests
	$(GO) run ./scripts/guards index

.PHONY: bench
bench: ## Run Go benchmarks (end-to-end: bin/oceanway bench, and make bench/peers)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

.PHONY: bench/peers
bench/peers: ## oceanway bench side by side with River, watermill-sql and the machine's limit (module bench/peers; ARGS="--repeat 3")
	@scripts/bench-peers $(ARGS)

.PHONY: build
build: ## Build bin/oceanway
	$(GO) build -o bin/oceanway ./cmd/oceanway

.PHONY: docs/requirements
docs/requirements: ## Regenerate docs/requirements.md (requirement ID → code and tests) from ../shared/spec/REQUIREMENTS.md
	$(GO) run ./scripts/reqindex
