# turnd — see README.md. `make test` is what CI runs (.ci/run).
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN     := bin/turnd

.PHONY: build build-static run test test-go test-deploy test-fuzz tools lint bench clean soak

# Built with go test's settings (cgo as the toolchain has it, no -trimpath),
# so a build after a test run reuses every package the tests compiled; the
# linker flags change only the final link.
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/turnd

# A static, path-trimmed binary as the Docker image builds it (no libc needed).
build-static:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/turnd

# Runs turnd; with no ARGS, the embedded loopback demo config.
run: build
	./$(BIN) $(ARGS)

# The whole suite: unit tests, end-to-end tests against coturn's tools, and
# the deployment tests (Helm chart, systemd unit) in their own Go module.
test: tools lint bpf-check build test-go test-fuzz test-deploy

test-go:
	$(GO) test -race -count=1 -timeout 15m ./...
	cd bench/plot && $(GO) test -count=1 ./...

# Every fuzz target runs briefly beyond its seed corpus (which test-go already
# replays): new crashers surface in CI, bounded at FUZZTIME inputs each (a count, not a duration: a time limit races the fuzzer's own shutdown and fails spuriously).
FUZZTIME ?= 20000x
FUZZ_TARGETS := pkg/server:FuzzServerPacket internal/edge:FuzzOwnStream internal/edge:FuzzOwnStreamReactor pkg/config:FuzzParse \
	internal/auth:FuzzKeys pkg/peerfilter:FuzzParseEntry internal/wire:FuzzWire internal/relay:FuzzChannelData \
	internal/edge:FuzzProxyHeader internal/auth:FuzzNonceCheck pkg/turn:FuzzServe
test-fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) >/tmp/turnd-fuzz.log 2>&1 || { cat /tmp/turnd-fuzz.log; exit 1; }; \
		! grep -q 'no fuzz tests to fuzz' /tmp/turnd-fuzz.log || { echo "$$pkg has no $$fn"; exit 1; }; \
	done

test-deploy:
	cd deploy/test && TURND_BIN=$(abspath $(BIN)) PATH="$(abspath bin/tools):$$PATH" $(GO) test -count=1 -timeout 15m ./...

# Installs coturn's test clients, iproute2, systemd-analyze, chromium, clang/llvm/libbpf-dev, ethtool, redis-server and Helm when missing.
tools:
	./scripts/install-test-tools.sh

lint:
	@out="$$(gofmt -l cmd pkg internal test bench deploy/test)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd deploy/test && $(GO) vet ./...
	cd bench/plot && $(GO) vet ./...

# A long churn of allocations against the real binary (TestSoak in test/e2e):
# prints turnd's goroutines, open files and live heap before and after, the
# peak allocations and the allocation rate. CI runs the same test for 15 s.
# Every wait in it is bounded, hence no go test timeout.
SOAK_DURATION ?= 5m
soak: tools
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 0 ./test/e2e

# Compares turnd with coturn on loopback (about six minutes on a quiet
# machine; not part of `make test`): prints a table and writes
# bench/results/latest.json and docs/img/cpu-per-packet.png. BENCH_ARGS go to the
# runner, e.g. BENCH_ARGS="-scenarios relay-40k,saturation -max-bps 80000000".
bench: build
	./bench/run.sh $(BENCH_ARGS)

# Regenerates internal/offload's BPF objects and Go bindings from its C source
# (clang, llvm and libbpf-dev, from `make tools`); bpf-check fails when the
# committed ones differ from what the source gives.
.PHONY: bpf bpf-check
bpf:
	./scripts/bpf-generate.sh

bpf-check:
	./scripts/bpf-generate.sh --check

clean:
	rm -rf bin
