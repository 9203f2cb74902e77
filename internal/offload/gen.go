package offload

// The generated relay_bpfe{l,b}.{go,o} are committed; scripts/bpf-generate.sh
// regenerates them and, with --check, fails when they differ from the source.
// It sets BPF_INCLUDE to the build machine's multiarch include directory
// (asm/types.h lives there), which go generate expands below.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -Wall -Werror -I$BPF_INCLUDE" -target bpfel,bpfeb -type up_key -type up_val -type down_key -type down_val -type counters relay bpf/relay.c
