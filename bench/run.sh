#!/usr/bin/env bash
# bench/run.sh is `make bench`: it compares turnd (bin/turnd, built by
# `make build`) with coturn's turnserver on this machine's loopback, one
# server after the other under identical load, and writes
#   bench/results/latest.json        every figure, for the docs
#   docs/img/cpu-per-packet.png      server CPU per packet vs offered load
# and prints the table. It takes about six minutes on a quiet machine (the
# runner waits for one before each server starts, and measures a row again
# when other work disturbed it).
# Extra arguments go to the runner, e.g. -scenarios relay-40k,saturation.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# coturn's server and test tools come from Debian's coturn package, the
# fleet scenario's redis-server from Debian's redis-server.
for tool in turnserver turnutils_uclient turnutils_peer redis-server; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench: $tool is missing; installing Debian's coturn and redis-server (scripts/install-test-tools.sh)" >&2
		./scripts/install-test-tools.sh
		break
	fi
done
if [[ ! -x bin/turnd ]]; then
	echo "bench: bin/turnd is missing: run make build" >&2
	exit 1
fi

# Build everything before measuring anything.
go build -o bin/turnload ./cmd/turnload
go build -o bin/bench-runner ./bench/runner
# bench/plot is its own module (gonum/plot stays out of the server's).
(cd bench/plot && go build -o ../../bin/bench-plot .)

mkdir -p bench/results docs/img
bin/bench-runner -turnd bin/turnd -turnload bin/turnload -out bench/results/latest.json "$@"
bin/bench-plot -in bench/results/latest.json -out docs/img/cpu-per-packet.png
echo "bench: drew docs/img/cpu-per-packet.png from bench/results/latest.json" >&2
