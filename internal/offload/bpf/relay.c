// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/* relay.c: the tc program that relays UDP ChannelData (RFC 8656 section 12)
 * between a TURN client and a peer without waking user space. It handles the
 * one common shape (one whole frame per datagram, bound channel, a route by
 * an attached interface) and hands everything else up unchanged: every
 * decision is made before the first byte is written. */

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "maps.h"
#include "parse.h"
#include "rewrite.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define LOOPBACK_IFINDEX 1
/* tcx's "next program" (TCX_NEXT, not in Debian 12's UAPI headers): what the
 * program leaves alone goes on to the programs after it (a successor's during
 * a hand-over, anyone's), then up the stack as it came. TC_ACT_OK would end the
 * chain. */
#define TCX_NEXT (-1)

static __always_inline int pass(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&passed, &reason);

	if (n)
		*n += 1;
	return TCX_NEXT;
}

/* Test hooks, set through the loader by this package's tests only. Zero in
 * production: the verifier knows a constant's value and removes the
 * branches on it. */
volatile const __u32 fault = 0;
#define FAULT_REWRITE 1 /* a helper fails at the start of the rewrite */
#define FAULT_REUSE 2   /* the entry is replaced twice while a datagram is relayed */

static __always_inline int drop(void)
{
	__u32 reason = DROP_ERROR;
	__u64 *n = bpf_map_lookup_elem(&passed, &reason);

	if (n)
		*n += 1;
	return TC_ACT_SHOT;
}

/* route fills the plan's fib result; it returns -1 when the datagram can
 * leave by an attached interface and be rewritten, else the pass reason.
 * The lookup is made as for locally sent traffic (input interface lo, as
 * the kernel's own output route lookup does): the new source is one of this
 * host's addresses, and the egress device is what the lookup is for, so it
 * cannot be named as BPF_FIB_LOOKUP_OUTPUT would need. It skips the
 * neighbour table, which would take a STALE entry as it is: send() leaves
 * the link layer to the neighbour subsystem. tot_len still makes it check
 * the route's MTU. */
static __always_inline int route(struct __sk_buff *skb, struct plan *pl, __u32 frame_len)
{
	struct bpf_fib_lookup *f = &pl->fib;
	__u32 iph = pl->out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	long rc;

	f->l4_protocol = IPPROTO_UDP;
	__builtin_memcpy(&f->sport, pl->sport, 2);
	__builtin_memcpy(&f->dport, pl->dport, 2);
	f->tot_len = iph + sizeof(struct udphdr) + pl->paylen;
	f->ifindex = LOOPBACK_IFINDEX;
	if (pl->out_v6) {
		f->family = AF_INET6;
		__builtin_memcpy(f->ipv6_src, pl->src, 16);
		__builtin_memcpy(f->ipv6_dst, pl->dst, 16);
	} else {
		f->family = AF_INET;
		__builtin_memcpy(&f->ipv4_src, pl->src + 12, 4);
		__builtin_memcpy(&f->ipv4_dst, pl->dst + 12, 4);
	}
	rc = bpf_fib_lookup(skb, f, sizeof(*f), BPF_FIB_LOOKUP_SKIP_NEIGH);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return PASS_MTU;
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return PASS_FIB;
	if (!bpf_map_lookup_elem(&egress, &f->ifindex))
		return PASS_EGRESS;
	/* bpf_skb_change_tail refuses encapsulated skbs: ask now, not
	 * half-way through the rewrite. Trimming to the datagram's own
	 * length drops only Ethernet padding, which user space never sees,
	 * and makes the rewrite's own resize always change the length, which
	 * is what turns a CHECKSUM_COMPLETE skb into CHECKSUM_NONE (its
	 * skb->csum would not survive the payload move). */
	if (bpf_skb_change_tail(skb, frame_len, 0))
		return PASS_ENCAPSULATED;
	return -1;
}

/* send hands the rewritten datagram to the neighbour subsystem of the
 * route's interface, for the nexthop the lookup left in the fib result (the
 * gateway, or the destination itself; an IPv4 route may have an IPv6
 * gateway). It resolves a missing entry while the datagram waits in its
 * queue, revalidates a stale one, and writes the link-layer header; the
 * kernel drops the Ethernet header the datagram came with itself. */
static __always_inline long send(struct plan *pl)
{
	struct bpf_redir_neigh nh = {};

	if (pl->fib.family == AF_INET6) {
		nh.nh_family = AF_INET6;
		__builtin_memcpy(nh.ipv6_nh, pl->fib.ipv6_dst, 16);
	} else {
		nh.nh_family = AF_INET;
		nh.ipv4_nh = pl->fib.ipv4_dst;
	}
	return bpf_redirect_neigh(pl->fib.ifindex, &nh, sizeof(nh), 0);
}

/* reuse replaces the downlink entry for dk twice, with another client and
 * channel: a preallocated hash map gives the element a lookup returned to
 * the second replacement, as concurrent Puts from user space would. */
static __always_inline void reuse(struct down_key *dk, struct down_val *v)
{
	struct down_val other = *v;

	other.channel[1] ^= 1;
	other.client[15] ^= 1;
	bpf_map_update_elem(&downlink, dk, &other, BPF_ANY);
	bpf_map_update_elem(&downlink, dk, &other, BPF_ANY);
}

/* plan_out checks that a datagram of plen payload bytes may leave from
 * src:sport to dst:dport in the family flags give and fills those into pl.
 * It returns the reason to pass the datagram to user space, or -1 to go on.
 * The slot lookup stays in the callers: here it makes the verifier explore
 * more states. */
static __always_inline int plan_out(struct pkt *p, struct plan *pl, __u32 plen, __u8 flags,
				    const __u8 *src, const __u8 *dst, const __u8 *sport, const __u8 *dport)
{
	if (plen > MAX_PAYLOAD)
		return PASS_TOO_LARGE;
	pl->out_v6 = !!(flags & F_V6);
	if (!p->v6 && p->csum == 0 && pl->out_v6)
		return PASS_NO_CHECKSUM;
	__builtin_memcpy(pl->src, src, 16);
	__builtin_memcpy(pl->dst, dst, 16);
	__builtin_memcpy(pl->sport, sport, 2);
	__builtin_memcpy(pl->dport, dport, 2);
	return -1;
}

/* Client -> peer: strip the ChannelData header. v is the program's own
 * copy of the entry: user space may reuse the map's element meanwhile. */
static __always_inline int to_peer(struct __sk_buff *skb, struct pkt *p, struct up_val *v)
{
	struct plan pl = {};
	struct counters *c;
	__u32 flen = bpf_ntohl(p->chd) & 0xffff;
	__u32 udp_len, oiph;
	int r;

	/* RFC 8656 12.5: over UDP the frame is the whole datagram; padding
	 * or a short frame is left to user space, which knows what to do. */
	if (flen + 4 + sizeof(struct udphdr) != p->udp_len)
		return pass(PASS_MALFORMED);
	r = plan_out(p, &pl, flen, v->flags, v->relay, v->peer, v->relay_port, v->peer_port);
	if (r >= 0)
		return pass(r);
	c = bpf_map_lookup_elem(&slots, &v->slot);
	if (!c)
		return pass(PASS_NO_SLOT);
	pl.paylen = flen;
	r = route(skb, &pl, ETH_HLEN + p->iph_len + p->udp_len);
	if (r >= 0)
		return pass(r);

	/* Counted as soon as it will be relayed, so a Delete followed by a
	 * fold misses at most a datagram whose lookup was done, not one whose
	 * rewrite is still running; a failed rewrite takes it back. */
	c->to_peer_packets++;
	c->to_peer_bytes += flen;
	/* From here on the packet changes: a failure drops it. */
	udp_len = sizeof(struct udphdr) + flen;
	oiph = pl.out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	if (fault == FAULT_REWRITE || change_family(skb, p, &pl) ||
	    move_down(skb, ETH_HLEN + oiph + sizeof(struct udphdr) + 4, flen) ||
	    bpf_skb_change_tail(skb, ETH_HLEN + oiph + udp_len, 0) ||
	    write_headers(skb, &pl, udp_len) ||
	    fix_csum(skb, p, &pl, udp_len, p->chd, 0)) {
		c->to_peer_packets--;
		c->to_peer_bytes -= flen;
		return drop();
	}
	return send(&pl);
}

/* Peer -> client: prepend a ChannelData header. v is the program's own
 * copy of the entry found under dk. */
static __always_inline int to_client(struct __sk_buff *skb, struct pkt *p, struct down_key *dk,
				     struct down_val *v)
{
	struct plan pl = {};
	struct counters *c;
	__u32 plen = p->udp_len - sizeof(struct udphdr);
	__u32 udp_len, oiph, chd;
	int r;

	r = plan_out(p, &pl, plen, v->flags, v->server, v->client, v->server_port, v->client_port);
	if (r >= 0)
		return pass(r);
	c = bpf_map_lookup_elem(&slots, &v->slot);
	if (!c)
		return pass(PASS_NO_SLOT);
	pl.paylen = plen + 4;
	r = route(skb, &pl, ETH_HLEN + p->iph_len + p->udp_len);
	if (r >= 0)
		return pass(r);
	if (fault == FAULT_REUSE)
		reuse(dk, v);

	c->to_client_packets++; /* as in to_peer */
	c->to_client_bytes += plen;
	udp_len = sizeof(struct udphdr) + 4 + plen;
	oiph = pl.out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	__u8 hdr[4] = {v->channel[0], v->channel[1], plen >> 8, plen & 0xff}; /* RFC 8656 12.4 */

	__builtin_memcpy(&chd, hdr, 4);
	if (fault == FAULT_REWRITE || change_family(skb, p, &pl) ||
	    bpf_skb_change_tail(skb, ETH_HLEN + oiph + udp_len, 0) ||
	    move_up(skb, ETH_HLEN + oiph + sizeof(struct udphdr), plen) ||
	    bpf_skb_store_bytes(skb, ETH_HLEN + oiph + sizeof(struct udphdr), &chd, 4, 0) ||
	    write_headers(skb, &pl, udp_len) ||
	    fix_csum(skb, p, &pl, udp_len, 0, chd)) {
		c->to_client_packets--;
		c->to_client_bytes -= plen;
		return drop();
	}
	return send(&pl);
}

SEC("tc")
int relay(struct __sk_buff *skb)
{
	struct pkt p = {};
	int r = parse(skb, &p);

	if (r >= 0)
		return pass(r);
	if (p.udp_len >= sizeof(struct udphdr) + 4) {
		__u8 hi = ((__u8 *)&p.chd)[0]; /* first byte on the wire */

		/* RFC 8656 12: channel numbers 0x4000 through 0x7FFF */
		if ((hi & 0xc0) == 0x40) {
			struct up_key k = {};
			struct up_val *v;

			__builtin_memcpy(k.client, p.src, 16);
			__builtin_memcpy(k.server, p.dst, 16);
			__builtin_memcpy(k.client_port, p.sport, 2);
			__builtin_memcpy(k.server_port, p.dport, 2);
			__builtin_memcpy(k.channel, &p.chd, 2);
			v = bpf_map_lookup_elem(&uplink, &k);
			if (v) {
				struct up_val uv = *v;

				return to_peer(skb, &p, &uv);
			}
		}
	}
	struct down_key dk = {};
	struct down_val *dv;

	__builtin_memcpy(dk.peer, p.src, 16);
	__builtin_memcpy(dk.relay, p.dst, 16);
	__builtin_memcpy(dk.peer_port, p.sport, 2);
	__builtin_memcpy(dk.relay_port, p.dport, 2);
	dv = bpf_map_lookup_elem(&downlink, &dk);
	if (dv) {
		struct down_val dvc = *dv;

		return to_client(skb, &p, &dk, &dvc);
	}
	return pass(PASS_NO_ENTRY);
}
