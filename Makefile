# The Makefile is the contract: .ci/run calls `make test`.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# Packages whose code runs goroutines are tested with the race detector.
PKGS     := ./...

.PHONY: all build test check bench release clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/sluice ./cmd/sluice

test:
	$(GO) test -race -shuffle=on -timeout 15m $(PKGS)

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; gofmt -d $$out; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	$(MAKE) test

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./limiter/ | tee bench.txt

clean:
	rm -rf bin dist
