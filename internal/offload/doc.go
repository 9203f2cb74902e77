// Package offload is turnd's kernel fast path: a tc program, attached with
// tcx at the ingress of the interfaces that carry client and peer traffic,
// that relays UDP ChannelData of bound channels both ways without waking user
// space, and counts what it relayed per allocation in per-CPU counters.
//
// The program is bpf/relay.c (with bpf/parse.h, which only reads, and
// bpf/rewrite.h, which runs once every check has passed), compiled by
// bpf2go into the committed relay_bpfel/bpfeb files (gen.go).
// Path (path.go) loads the program and attaches it; Put and Delete install
// and remove one channel's entries (entry.go); NewSlot, FreeSlot and Count
// own the counters (slots.go); Passed says why datagrams went up instead
// (passed.go). Whatever the program does not handle reaches user space
// exactly as it arrived, so turning the path off or losing an entry only
// moves traffic back to the user-space relay.
//
// It knows nothing of allocations, relays, configuration, HTTP or metrics:
// the relay decides what to install and when to remove it.
package offload
