#!/usr/bin/env bash
# install-test-tools.sh installs what turnd's tests need beyond Go itself, and
# nothing that is already there, so running it twice is cheap:
#   - Debian packages: coturn (turnutils_uclient/turnutils_peer for interop and
#     load tests), iproute2 (network namespaces), systemd (systemd-analyze for
#     the unit-file tests), chromium (the browser tests in test/e2e), clang,
#     llvm and libbpf-dev (make bpf, for internal/offload's BPF program),
#     ethtool (internal/offload's checksum-offload tests) and redis-server
#     (pkg/fleet's tests start their own);
#   - Helm, built from source through the Go module proxy into bin/tools/ (a
#     prebuilt Helm release cannot be downloaded on our machines).
# Run as root on Debian. Set HELM_VERSION to override the pinned Helm.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$repo/bin/tools"

# Packages are checked by the command each one provides, not by dpkg, so a
# tool installed some other way also counts.
declare -A want=(
	[turnutils_uclient]=coturn
	[ip]=iproute2
	[systemd-analyze]=systemd
	[chromium]=chromium
	[clang]=clang
	[llvm-strip]=llvm
	[ethtool]=ethtool
	[redis-server]=redis-server
)
missing=()
for cmd in "${!want[@]}"; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("${want[$cmd]}")
done
# libbpf-dev provides headers, not a command.
[[ -f /usr/include/bpf/bpf_helpers.h ]] || missing+=(libbpf-dev)
if ((${#missing[@]} > 0)); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-test-tools: need root to install: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# --no-install-recommends keeps coturn from pulling in a database server,
	# and chromium from pulling in a desktop.
	apt-get install -y --no-install-recommends "${missing[@]}"
	# The coturn package enables its own service; a stray coturn on 3478 would
	# collide with the tests' servers.
	if [[ " ${missing[*]} " == *" coturn "* ]] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now coturn >/dev/null 2>&1 || true
	fi
	# Likewise redis-server's: the tests start their own on free ports, and
	# a machine-wide Redis is nothing they need.
	if [[ " ${missing[*]} " == *" redis-server "* ]] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now redis-server >/dev/null 2>&1 || true
	fi
fi

# Helm: rebuilt only when missing or of another version.
have=""
if [[ -x "$tools/helm" ]]; then
	have="$("$tools/helm" version --template '{{.Version}}' 2>/dev/null || true)"
fi
if [[ "$have" != "$HELM_VERSION" ]]; then
	mkdir -p "$tools"
	echo "install-test-tools: building helm $HELM_VERSION into $tools"
	# Helm's Makefile stamps its version and the Kubernetes version that
	# `helm template` and `helm lint` assume (from the client-go it is built
	# with); a plain go install would leave v1.20, older than charts allow.
	gomod="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	kminor="$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod")"
	if [[ -z "$kminor" ]]; then
		echo "install-test-tools: cannot find client-go's version in $gomod" >&2
		exit 1
	fi
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
	done
	GOBIN="$tools" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" \
		"helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
"$tools/helm" version --short
