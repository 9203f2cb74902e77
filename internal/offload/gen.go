package offload

// The generated relay_bpfe{l,b}.{go,o} are committed; scripts/bpf-generate.sh
// regenerates them and, with --check, fails when they differ from the source.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel,bpfeb -type up_key -type up_val -type down_key -type down_val -type counters relay bpf/relay.c
