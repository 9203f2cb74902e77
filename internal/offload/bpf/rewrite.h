/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* rewrite.h: turns a datagram into the one it is relayed as, once every
 * check has passed; each function returns nonzero when a helper failed. */
#pragma once

#include "parse.h"

#define UDP_CSUM_OFF 6

/* Where a datagram goes and as what, decided before anything is written. */
struct plan {
	struct bpf_fib_lookup fib;
	__u8 src[16];
	__u8 dst[16];
	__u8 sport[2];
	__u8 dport[2];
	__u32 paylen;  /* payload bytes after the rewrite (without ChannelData) */
	__u8 out_v6;
};

static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* write_headers writes a fresh IP header and the UDP ports and length (not
 * its checksum) for a datagram of udp_len bytes; the link-layer header is
 * the neighbour subsystem's (send). */
static __always_inline int write_headers(struct __sk_buff *skb, struct plan *pl, __u32 udp_len)
{
	__u32 iph;

	if (pl->out_v6) {
		struct ipv6hdr ip6 = {};

		ip6.version = 6;
		ip6.payload_len = bpf_htons(udp_len);
		ip6.nexthdr = IPPROTO_UDP;
		ip6.hop_limit = 64;
		__builtin_memcpy(&ip6.saddr, pl->src, 16);
		__builtin_memcpy(&ip6.daddr, pl->dst, 16);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6), 0))
			return -1;
		iph = sizeof(ip6);
	} else {
		struct iphdr ip = {};

		ip.version = 4;
		ip.ihl = 5;
		ip.tot_len = bpf_htons(sizeof(ip) + udp_len);
		/* DF as user space's sockets send (IP_PMTUDISC_WANT sets it
		 * on every datagram within the path MTU, and the program
		 * writes none beyond the egress MTU); an atomic datagram's
		 * ID is 0, as the kernel gives unconnected sockets' (RFC 6864). */
		ip.frag_off = bpf_htons(0x4000);
		ip.ttl = 64;
		ip.protocol = IPPROTO_UDP;
		__builtin_memcpy(&ip.saddr, pl->src + 12, 4);
		__builtin_memcpy(&ip.daddr, pl->dst + 12, 4);
		ip.check = csum_fold(bpf_csum_diff(0, 0, (__be32 *)&ip, sizeof(ip), 0));
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0))
			return -1;
		iph = sizeof(ip);
	}
	struct {
		__u8 sport[2];
		__u8 dport[2];
		__be16 len;
	} u;
	__builtin_memcpy(u.sport, pl->sport, 2);
	__builtin_memcpy(u.dport, pl->dport, 2);
	u.len = bpf_htons(udp_len);
	return bpf_skb_store_bytes(skb, ETH_HLEN + iph, &u, sizeof(u), 0) ? -1 : 0;
}

/* fix_csum updates the UDP checksum incrementally for every ip_summed: the
 * pseudo-header part (addresses, length) with BPF_F_PSEUDO_HDR, which is all
 * a CHECKSUM_PARTIAL skb's field holds, and the UDP header and ChannelData
 * part without it, which the device computes itself for such skbs. Both
 * families' pseudo-headers sum the same words (addresses, length, protocol),
 * so a v4<->v6 change is a difference of addresses alone. */
static __always_inline int fix_csum(struct __sk_buff *skb, struct pkt *p, struct plan *pl,
				    __u32 udp_len, __u32 chd_old, __u32 chd_new)
{
	__be32 from[10] = {}, to[10] = {};
	__u32 off = ETH_HLEN + (pl->out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) + UDP_CSUM_OFF;
	__u64 flags = BPF_F_MARK_MANGLED_0;
	__s64 d;

	/* pseudo-header: addresses and length */
	if (p->v6) {
		__builtin_memcpy(from, p->src, 16);
		__builtin_memcpy(from + 4, p->dst, 16);
	} else {
		__builtin_memcpy(from, p->src + 12, 4);
		__builtin_memcpy(from + 4, p->dst + 12, 4);
	}
	if (pl->out_v6) {
		__builtin_memcpy(to, pl->src, 16);
		__builtin_memcpy(to + 4, pl->dst, 16);
	} else {
		__builtin_memcpy(to, pl->src + 12, 4);
		__builtin_memcpy(to + 4, pl->dst + 12, 4);
	}
	from[8] = bpf_htonl(p->udp_len);
	to[8] = bpf_htonl(udp_len);
	d = bpf_csum_diff(from, 36, to, 36, 0);
	if (d < 0 || bpf_l4_csum_replace(skb, off, 0, d, flags | BPF_F_PSEUDO_HDR))
		return -1;

	/* UDP header and data: ports, length, ChannelData header */
	__builtin_memcpy(&from[0], p->sport, 2);
	__builtin_memcpy((__u8 *)&from[0] + 2, p->dport, 2);
	__builtin_memcpy(&to[0], pl->sport, 2);
	__builtin_memcpy((__u8 *)&to[0] + 2, pl->dport, 2);
	from[1] = bpf_htonl(p->udp_len);
	to[1] = bpf_htonl(udp_len);
	from[2] = chd_old;
	to[2] = chd_new;
	d = bpf_csum_diff(from, 12, to, 12, 0);
	if (d < 0 || bpf_l4_csum_replace(skb, off, 0, d, flags))
		return -1;
	return 0;
}

/* bounded returns n, 1 <= n <= CHUNK, in a form the verifier can bound. */
static __always_inline __u32 bounded(__u32 n)
{
	return ((n - 1) & (CHUNK - 1)) + 1;
}

/* The payload moves by 4 bytes and the headers stay where they are, so a
 * CHECKSUM_PARTIAL skb's csum_start still points at the UDP header (the
 * kernel's adjust_room moves the headers and leaves csum_start behind).
 * move_payload moves len bytes at offset at 4 bytes towards the head
 * (down), first chunk first, or towards the tail, last chunk first, so each
 * byte is read before it is overwritten. Callers pass down as a constant,
 * so each inlined copy keeps one direction's loop. */
static __always_inline int move_payload(struct __sk_buff *skb, __u32 at, __u32 len, int down)
{
	__u32 key = 0;
	struct chunk *c = bpf_map_lookup_elem(&scratch, &key);

	if (!c)
		return -1;
	for (__u32 i = 0; i < MAX_CHUNKS; i++) {
		__u32 done = i * CHUNK;
		__u32 n, from;

		if (done >= len)
			break;
		n = len - done;
		if (n > CHUNK)
			n = CHUNK;
		n = bounded(n);
		from = down ? at + done : at + len - done - n;
		if (bpf_skb_load_bytes(skb, from, c->b, n))
			return -1;
		if (bpf_skb_store_bytes(skb, down ? from - 4 : from + 4, c->b, n, 0))
			return -1;
	}
	return 0;
}

static __always_inline int move_down(struct __sk_buff *skb, __u32 at, __u32 len)
{
	return move_payload(skb, at, len, 1);
}

static __always_inline int move_up(struct __sk_buff *skb, __u32 at, __u32 len)
{
	return move_payload(skb, at, len, 0);
}

static __always_inline int change_family(struct __sk_buff *skb, struct pkt *p, struct plan *pl)
{
	if (p->v6 == pl->out_v6)
		return 0;
	return bpf_skb_change_proto(skb, bpf_htons(pl->out_v6 ? ETH_P_IPV6 : ETH_P_IP), 0) ? -1 : 0;
}
