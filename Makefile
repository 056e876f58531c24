# The Makefile is the contract: .ci/run calls `make test` (and the other CI
# targets); the README's quick start uses `make test`.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# Every package is tested with the race detector: most of them run goroutines.
PKGS     := ./...
FUZZTIME ?= 10s

.PHONY: all build test test-browser check bench bench-control e2e e2e-strict e2e-zoo e2e-members e2e-fleet faults flood bench-flood fuzz release clean bin/faults

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/sluice ./cmd/sluice

# promtool checks the alert rules and the dashboard's queries. Debian's
# prometheus package would start a server, so only its promtool binary is
# extracted into bin/.
PROMTOOL := $(shell command -v promtool 2>/dev/null || echo $(CURDIR)/bin/promtool)

bin/promtool:
	mkdir -p bin
	cd bin && { apt-get download prometheus 2>/dev/null || { apt-get update -qq && apt-get download prometheus; }; } \
		&& dpkg-deb --fsys-tarfile prometheus_*.deb | tar -xOf - ./usr/bin/promtool > promtool.tmp \
		&& rm -f prometheus_*.deb && chmod +x promtool.tmp && mv promtool.tmp promtool

test: $(if $(shell command -v promtool 2>/dev/null),,bin/promtool)
	PROMTOOL=$(PROMTOOL) $(GO) test -race -shuffle=on -timeout 15m $(PKGS)

# Browser tests of the simulator page and the live page (docs/ui.md), in
# headless Chromium from Debian's package, installed when missing.
test-browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	SLUICE_BROWSER_REQUIRED=1 $(GO) test -tags browser -count=1 -timeout 10m -run Browser ./browsertest/ ./cmd/sluice/

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; gofmt -d $$out; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags browser ./browsertest/ ./cmd/sluice/
	$(GO) tool staticcheck $(PKGS)
	$(MAKE) test

# Benchmarks: each one runs beside its baseline in the same process, so read
# them as ratios (benchstat-friendly output in bench.txt).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./limiter/ ./sources/natsjs/ ./worker/ | tee bench.txt

# The limiter's control quality in the simulator: every mode on every
# scenario, then a sweep of CUBIC's scale_constant (docs/simulator.md).
bench-control:
	sh scripts/bench-control.sh

# End-to-end runs with real processes (about 90 s each): the model API, two
# `sluice run` sharing an embedded JetStream, 3,000 jobs; then the same with
# quota headers (testserver --headers ietf), the default initial rate, no
# 429 allowed and a drain within 1.15 x ideal; see docs/demo.md.
e2e:
	GO=$(GO) ./scripts/e2e.sh
	GO=$(GO) HEADERS=ietf RATE=default MAX_THROTTLED=0 MAX_RATIO=1.15 ./scripts/e2e.sh

# The fault-injection suite (docs/reliability.md): real sluice, testserver
# and NATS processes, one fault per scenario, every job audited. One or
# some scenarios: make faults SCENARIO=poison[,sigterm].
faults: build bin/faults
	bin/faults -sluice bin/sluice $(if $(SCENARIO),-scenario $(SCENARIO))

# 1,000,000 jobs at an unlimited rate: jobs/s and the worker's peak RSS.
# A benchmark, not in CI.
flood: build bin/faults
	bin/faults -sluice bin/sluice -scenario flood

# The flood beside an older commit's worker, built in a git worktree of
# its own (default dce2799): runs alternate, the older first, both with
# this tree's faults (HARNESS=own: each commit's) and the older commit's
# testserver (TARGET=head: this tree's), and the ratio of jobs/s is
# printed last (docs/operations.md). BASE=<commit>, JOBS=<n>, PAIRS=<n>
# (default 2).
bench-flood:
	GO=$(GO) JOBS=$(or $(JOBS),1000000) PAIRS=$(or $(PAIRS),2) TARGET=$(or $(TARGET),base) HARNESS=$(or $(HARNESS),head) \
		sh scripts/bench-flood.sh $(or $(BASE),dce2799)

bin/faults:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/faults ./faults/cmd/faults

# One `sluice run` with default limiter options against nginx limit_req
# (20 requests/s, burst 5, 429 with Retry-After: 1) in front of the model
# API: 2,000 jobs queued before the worker starts (about 2 minutes);
# Debian's nginx-light is installed when missing.
e2e-strict:
	@command -v nginx >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light; }
	GO=$(GO) sh scripts/e2e-strict.sh

# Real gateways (docs/tuning.md): nginx limit_req at 20, 75 and 200 r/s
# with bursts 5, 10 and 20, haproxy's stick-table recipe, testserver's
# fixed window, and a worker started before its jobs arrive; each row a
# backlog of 4 minutes of ideal time, 4 rows at a time. About 16 minutes;
# prints one row per target and the worst ratio last.
e2e-zoo:
	@command -v nginx >/dev/null 2>&1 && command -v haproxy >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light haproxy; }
	GO=$(GO) sh scripts/e2e-zoo.sh

# The same with 3 workers in limiter.share.mode members, then with one of
# them SIGKILLed mid-drain (docs/scaling.md). JOBS=9000 spans several
# quota windows.
e2e-members:
	GO=$(GO) sh scripts/e2e-members.sh

# The fleet controller (docs/scaling.md): 6 workers in members mode with
# the default limiter settings drain 18,000 jobs at quota 6000 (one
# SIGKILLed at 60 s, one started at 90 s), then 3 start again at the
# remembered rate. About 7 minutes; prints the drain ratio last.
e2e-fleet:
	GO=$(GO) sh scripts/e2e-fleet.sh

# Each fuzz target for FUZZTIME, on top of its committed corpus.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh FuzzParseRetryAfter ./call/
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh FuzzParseRateLimit ./call/
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh FuzzDecode ./worker/
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh FuzzParseConfig ./internal/app/config/
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh FuzzResolve ./sinks/httpapi/

# Static binaries for linux and darwin, amd64 and arm64, with the version
# from git describe, and their checksums.
release:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "dist/sluice-$$os-$$arch ($(VERSION))"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o dist/sluice-$$os-$$arch ./cmd/sluice; \
	done
	cd dist && sha256sum sluice-* > SHA256SUMS
	./dist/sluice-$$($(GO) env GOHOSTOS)-$$($(GO) env GOHOSTARCH) version | grep -F 'sluice $(VERSION) '

clean:
	rm -rf bin dist bench.txt
