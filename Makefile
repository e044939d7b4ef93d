# warden — make targets. The README's two commands are `make demo` and `make test`.
GO       ?= go
BIN      := bin/warden
GOFILES  := $(shell find cmd internal examples -name '*.go' 2>/dev/null) go.mod go.sum
FUZZTIME ?= 30s
LINT     := $(GO) tool -modfile=tools/lint/go.mod golangci-lint

.PHONY: all build deps demo test test-short test-all test-escape test-unpriv test-keyring e2e fuzz bench cross lint fmt tidy clean

all: build

build: $(BIN)

$(BIN): $(GOFILES)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./cmd/warden

## deps: install the system packages warden needs (Debian/Ubuntu).
deps:
	@./scripts/deps.sh

## demo: install what is needed and show the sandbox at work: a scripted misbehaving agent, then
## a real one (OpenCode from npm) under warden start against warden's scripted model — no API key.
demo: deps build bin/warden-mockmodel
	@./scripts/demo.sh $(BIN) bin/warden-mockmodel

bin/warden-mockmodel: $(GOFILES)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./cmd/warden-mockmodel

## test: the whole test suite, with the race detector, including real-sandbox tests.
test:
	$(GO) test -race -count=1 ./...

## test-short: the inner loop: no real sandboxes, no listeners.
test-short:
	$(GO) test -short -race ./...

## test-escape: the adversarial suite against the real sandbox.
test-escape:
	$(GO) test -count=1 -run 'TestRun|TestEscape' -v ./internal/sandbox/... 2>&1 | tail -n 200

## test-keyring: the keychain tests against a real gnome-keyring in a private D-Bus session.
test-keyring:
	@./scripts/test-keyring.sh

## test-unpriv: run the test suite as an unprivileged user (needs root to create the user).
test-unpriv:
	@./scripts/test-unpriv.sh

## e2e: the four real agent harnesses (installed from npm, pinned) under warden start, against a mock model.
e2e:
	@./scripts/e2e.sh

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

## bench: warden's benchmarks side by side with their peers (hyperfine, go test -bench).
bench: build
	@./scripts/bench.sh $(BIN)

## cross: check that the darwin build vets and its tests compile.
cross:
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) test -exec=true ./...

lint:
	$(LINT) run ./...

fmt:
	$(GO) fmt ./...

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin
