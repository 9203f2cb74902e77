#!/usr/bin/env bash
# bpf-generate.sh regenerates internal/offload's BPF objects and their Go
# bindings (relay_bpfel/bpfeb .o and .go) from bpf/relay.c and its headers with bpf2go, which
# needs clang, llvm-strip and libbpf-dev's headers (scripts/install-test-tools.sh).
#   --check  regenerate into a temporary copy at another path instead and fail,
#            listing the files, when the result differs from what is committed
#            (the output must not depend on the checkout's path either).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pkg=internal/offload

# asm/types.h is in the multiarch include directory of the machine that
# builds (gen.go passes it to clang): the same objects come out of any of them.
multiarch="$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)"
if [[ -z "$multiarch" || ! -d "/usr/include/$multiarch" ]]; then
	echo "bpf-generate: no multiarch include directory (/usr/include/$multiarch)" >&2
	exit 1
fi
export BPF_INCLUDE="/usr/include/$multiarch"

generate() {
	(cd "$1/$pkg" && go generate ./...)
}

if [[ "${1:-}" != "--check" ]]; then
	generate "$repo"
	exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/$pkg"
cp "$repo/go.mod" "$repo/go.sum" "$tmp/"
cp -R "$repo/$pkg/." "$tmp/$pkg/"
rm -f "$tmp/$pkg"/relay_bpfe*
generate "$tmp"

differ=()
for f in "$tmp/$pkg"/relay_bpfe* "$repo/$pkg"/relay_bpfe*; do
	name="${f##*/}"
	if ! cmp -s "$repo/$pkg/$name" "$tmp/$pkg/$name" 2>/dev/null; then
		differ+=("$pkg/$name")
	fi
done
if ((${#differ[@]} > 0)); then
	echo "bpf-generate: generated files differ from the committed ones (run scripts/bpf-generate.sh):" >&2
	printf '%s\n' "${differ[@]}" | sort -u >&2
	exit 1
fi
echo "bpf-generate: generated files match $pkg/bpf/relay.c"
