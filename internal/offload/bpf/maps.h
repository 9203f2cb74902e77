/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* maps.h: the tables user space fills and the counters it reads; the Go
 * loader (internal/offload) mirrors these layouts through bpf2go. */
#pragma once

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* Addresses are 16 bytes, IPv4 in its ::ffff:a.b.c.d form, so one key type
 * serves both families. Ports and the channel are kept in network order as
 * bytes, so user space writes them without caring for host endianness. */
struct up_key {
	__u8 client[16];
	__u8 server[16];
	__u8 client_port[2];
	__u8 server_port[2];
	__u8 channel[2];
	__u8 pad[2];
};

#define F_V6 2 /* the rewritten datagram is IPv6 */

struct up_val {
	__u8 relay[16];
	__u8 peer[16];
	__u8 relay_port[2];
	__u8 peer_port[2];
	__u32 slot;
	__u8 flags;
	__u8 pad[3];
};

struct down_key {
	__u8 peer[16];
	__u8 relay[16];
	__u8 peer_port[2];
	__u8 relay_port[2];
};

struct down_val {
	__u8 server[16];
	__u8 client[16];
	__u8 server_port[2];
	__u8 client_port[2];
	__u8 channel[2];
	__u8 flags;
	__u8 pad;
	__u32 slot;
};

struct counters {
	__u64 to_peer_packets;
	__u64 to_peer_bytes;
	__u64 to_client_packets;
	__u64 to_client_bytes;
};

/* Why a datagram went up to user space; the Go side names them in the same
 * order (passed.go). */
enum pass_reason {
	PASS_NOT_IP,
	PASS_VLAN,
	PASS_NOT_UDP,
	PASS_IP_OPTIONS,
	PASS_FRAGMENT,
	PASS_IPV6_EXT,
	PASS_TTL,
	PASS_GSO,
	PASS_MALFORMED,
	PASS_NO_ENTRY,
	PASS_TOO_LARGE,
	PASS_NO_CHECKSUM,
	PASS_MTU,
	PASS_FIB,
	PASS_EGRESS,
	PASS_NO_SLOT,
	PASS_ENCAPSULATED,
	PASS_NOT_HOST,
	PASS_MARTIAN,
	PASS_V4_MAPPED,
	DROP_ERROR, /* a helper failed after the packet was changed: dropped */
	PASS_MAX,
};

/* Sizes are overridden at load time from Options. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct up_key);
	__type(value, struct up_val);
} uplink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct down_key);
	__type(value, struct down_val);
} downlink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct counters);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PASS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} passed SEC(".maps");

/* The interfaces a rewritten datagram may leave by: the attached ones, which
 * the operator chose; a route by any other (a tunnel, a VPN) stays with user
 * space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256); /* one per attached interface at load time */
	__type(key, __u32);
	__type(value, __u8);
} egress SEC(".maps");

#define CHUNK 512
#define MAX_CHUNKS 18
/* The largest payload relayed in the kernel; larger ones go up. */
#define MAX_PAYLOAD (CHUNK * MAX_CHUNKS)

struct chunk {
	__u8 b[CHUNK];
};

/* Where a payload is staged while it moves 4 bytes within the skb. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chunk);
} scratch SEC(".maps");
