# Treasury: `make run` starts a local sandbox, `make test` runs every test.
SHELL := /bin/bash
GO    ?= go

.PHONY: run test test-tools test-short build vet fmt postgres bench clean

## run: start the service in sandbox mode (finds or starts PostgreSQL) and print how to call it
run: postgres
	$(GO) run ./cmd/treasury dev

## test: every test, with the race detector, against a real PostgreSQL; the
## OpenAPI document linted (0 warnings); the client libraries against a
## real server (their toolchains installed first: see test-tools)
test: postgres test-tools
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	cd http/testdata/redocly && npm ci --no-audit --no-fund --loglevel=error && npx redocly lint ../../openapi.json --config redocly.yaml --format=stylish
	$(GO) test -race -count=1 -timeout 20m ./...

## test-tools: what the client libraries', the console's and the NATS
## forwarder's tests need, from Debian's packages (Ruby 3.1 and minitest;
## Python 3's standard library; Node.js and npm; Chromium for the console's
## journeys; nats-server) — installed only when missing
test-tools:
	@missing=; \
	command -v node >/dev/null && command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	command -v python3 >/dev/null || missing="$$missing python3"; \
	command -v ruby >/dev/null && ruby -e 'require "minitest"' 2>/dev/null || missing="$$missing ruby ruby-minitest"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v nats-server >/dev/null || missing="$$missing nats-server"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian's$$missing for the client libraries', the console's and the NATS forwarder's tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

## bench: start the service on a fresh database and measure it (writes bench/results.json)
bench: postgres
	$(GO) run ./bench

build:
	$(GO) build -o bin/treasury ./cmd/treasury

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## postgres: make sure PostgreSQL's programs exist when no server is listening
## on 127.0.0.1:5432 (the Go code then starts a private cluster under .data/).
postgres:
	@if [ -n "$$DATABASE_URL$$TEST_DATABASE_URL" ] || (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then exit 0; fi; \
	if command -v pg_config >/dev/null && [ -x "$$(pg_config --bindir)/initdb" ]; then exit 0; fi; \
	if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then exit 0; fi; \
	echo "PostgreSQL is neither running nor installed: installing Debian's postgresql package"; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null

clean:
	rm -rf bin .data
