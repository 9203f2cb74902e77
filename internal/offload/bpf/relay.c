// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/* relay.c: the tc program that relays UDP ChannelData (RFC 8656 section 12)
 * between a TURN client and a peer without waking user space. It handles the
 * one common shape (one whole frame per datagram, bound channel, a route and
 * a neighbour ready) and hands everything else up unchanged: every decision
 * is made before the first byte is written. */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define LOOPBACK_IFINDEX 1
#define UDP_CSUM_OFF 6

/* What the parser learnt of an IPv4 or IPv6 UDP datagram. */
struct pkt {
	__u8 src[16];
	__u8 dst[16];
	__u8 sport[2];
	__u8 dport[2];
	__u16 udp_len;   /* host order */
	__u16 csum;      /* as on the wire */
	__u32 chd;       /* the first 4 payload bytes as on the wire, if any */
	__u8 v6;
	__u8 iph_len;
};

/* Where a datagram goes and as what, decided before anything is written. */
struct plan {
	struct bpf_fib_lookup fib;
	__u8 src[16];
	__u8 dst[16];
	__u8 sport[2];
	__u8 dport[2];
	__u32 paylen;  /* payload bytes after the rewrite (without ChannelData) */
	__u8 out_v6;
	__u8 df;
};

static __always_inline int pass(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&passed, &reason);

	if (n)
		*n += 1;
	return TC_ACT_OK;
}

static __always_inline int drop(void)
{
	__u32 reason = DROP_ERROR;
	__u64 *n = bpf_map_lookup_elem(&passed, &reason);

	if (n)
		*n += 1;
	return TC_ACT_SHOT;
}

static __always_inline void map4(__u8 *dst, __be32 a)
{
	__builtin_memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	__builtin_memcpy(dst + 12, &a, 4);
}

static __always_inline int is_ext_header(__u8 nh)
{
	switch (nh) {
	case 0:   /* hop-by-hop */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253:
	case 254:
		return 1;
	}
	return 0;
}

/* parse returns -1 for a datagram worth a lookup, else the pass reason. */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	__u32 l4len;
	struct udphdr udp;

	if (skb->gso_size)
		return PASS_GSO;
	if (skb->vlan_present)
		return PASS_VLAN;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;
		__u32 tot;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)))
			return PASS_MALFORMED;
		if (ip.version != 4)
			return PASS_MALFORMED;
		if (ip.ihl != 5)
			return PASS_IP_OPTIONS;
		if (ip.frag_off & bpf_htons(0x3fff))
			return PASS_FRAGMENT;
		if (ip.protocol != IPPROTO_UDP)
			return PASS_NOT_UDP;
		if (ip.ttl <= 1)
			return PASS_TTL;
		tot = bpf_ntohs(ip.tot_len);
		if (tot < sizeof(ip) + sizeof(udp) || ETH_HLEN + tot > skb->len)
			return PASS_MALFORMED;
		l4len = tot - sizeof(ip);
		map4(p->src, ip.saddr);
		map4(p->dst, ip.daddr);
		p->iph_len = sizeof(ip);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)))
			return PASS_MALFORMED;
		if (ip6.version != 6)
			return PASS_MALFORMED;
		if (ip6.nexthdr != IPPROTO_UDP)
			return is_ext_header(ip6.nexthdr) ? PASS_IPV6_EXT : PASS_NOT_UDP;
		if (ip6.hop_limit <= 1)
			return PASS_TTL;
		l4len = bpf_ntohs(ip6.payload_len);
		if (l4len < sizeof(udp) || ETH_HLEN + sizeof(ip6) + l4len > skb->len)
			return PASS_MALFORMED;
		__builtin_memcpy(p->src, &ip6.saddr, 16);
		__builtin_memcpy(p->dst, &ip6.daddr, 16);
		p->iph_len = sizeof(ip6);
		p->v6 = 1;
	} else {
		return PASS_NOT_IP;
	}
	if (bpf_skb_load_bytes(skb, ETH_HLEN + p->iph_len, &udp, sizeof(udp)))
		return PASS_MALFORMED;
	if (bpf_ntohs(udp.len) != l4len)
		return PASS_MALFORMED;
	__builtin_memcpy(p->sport, &udp.source, 2);
	__builtin_memcpy(p->dport, &udp.dest, 2);
	p->udp_len = l4len;
	p->csum = udp.check;
	if (l4len >= sizeof(udp) + 4 &&
	    bpf_skb_load_bytes(skb, ETH_HLEN + p->iph_len + sizeof(udp), &p->chd, 4))
		return PASS_MALFORMED;
	return -1;
}

/* route fills the plan's fib result; it returns -1 when the datagram can
 * leave by an attached interface now and be rewritten, else the pass reason. The lookup is
 * made as for locally sent traffic (input interface lo, as the kernel's own
 * output route lookup does): the new source is one of this host's addresses
 * and the egress device is what the lookup is for, so it cannot be named as
 * BPF_FIB_LOOKUP_OUTPUT would need. */
static __always_inline int route(struct __sk_buff *skb, struct plan *pl)
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
	rc = bpf_fib_lookup(skb, f, sizeof(*f), 0);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return PASS_MTU;
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return PASS_NO_NEIGH;
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return PASS_FIB;
	if (!bpf_map_lookup_elem(&egress, &f->ifindex))
		return PASS_EGRESS;
	/* bpf_skb_change_tail refuses encapsulated skbs; asking for the
	 * length the skb already has changes nothing and tells before the
	 * first write rather than half-way through the rewrite. */
	if (bpf_skb_change_tail(skb, skb->len, 0))
		return PASS_ENCAPSULATED;
	return -1;
}

static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* write_headers writes L2, a fresh IP header and the UDP ports and length
 * (not its checksum) for a datagram of udp_len bytes. */
static __always_inline int write_headers(struct __sk_buff *skb, struct plan *pl, __u32 udp_len)
{
	struct ethhdr eth;
	__u32 iph;

	__builtin_memcpy(eth.h_dest, pl->fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, pl->fib.smac, ETH_ALEN);
	if (pl->out_v6) {
		struct ipv6hdr ip6 = {};

		eth.h_proto = bpf_htons(ETH_P_IPV6);
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

		eth.h_proto = bpf_htons(ETH_P_IP);
		ip.version = 4;
		ip.ihl = 5;
		ip.tot_len = bpf_htons(sizeof(ip) + udp_len);
		/* RFC 6864: the ID only matters where fragments may be made. */
		if (pl->df)
			ip.frag_off = bpf_htons(0x4000);
		else
			ip.id = (__u16)bpf_get_prandom_u32();
		ip.ttl = 64;
		ip.protocol = IPPROTO_UDP;
		__builtin_memcpy(&ip.saddr, pl->src + 12, 4);
		__builtin_memcpy(&ip.daddr, pl->dst + 12, 4);
		ip.check = csum_fold(bpf_csum_diff(0, 0, (__be32 *)&ip, sizeof(ip), 0));
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0))
			return -1;
		iph = sizeof(ip);
	}
	if (bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return -1;
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
 * kernel's adjust_room moves the headers and leaves csum_start behind). */
static __always_inline int move_down(struct __sk_buff *skb, __u32 at, __u32 len)
{
	__u32 key = 0;
	struct chunk *c = bpf_map_lookup_elem(&scratch, &key);

	if (!c)
		return -1;
	for (__u32 i = 0; i < MAX_CHUNKS; i++) {
		__u32 done = i * CHUNK;
		__u32 n;

		if (done >= len)
			break;
		n = len - done;
		if (n > CHUNK)
			n = CHUNK;
		n = bounded(n);
		if (bpf_skb_load_bytes(skb, at + done, c->b, n))
			return -1;
		if (bpf_skb_store_bytes(skb, at + done - 4, c->b, n, 0))
			return -1;
	}
	return 0;
}

static __always_inline int move_up(struct __sk_buff *skb, __u32 at, __u32 len)
{
	__u32 key = 0;
	struct chunk *c = bpf_map_lookup_elem(&scratch, &key);

	if (!c)
		return -1;
	for (__u32 i = 0; i < MAX_CHUNKS; i++) {
		__u32 n;

		if (len == 0)
			break;
		n = len;
		if (n > CHUNK)
			n = CHUNK;
		n = bounded(n);
		len -= n;
		if (bpf_skb_load_bytes(skb, at + len, c->b, n))
			return -1;
		if (bpf_skb_store_bytes(skb, at + len + 4, c->b, n, 0))
			return -1;
	}
	return 0;
}

static __always_inline int change_family(struct __sk_buff *skb, struct pkt *p, struct plan *pl)
{
	if (p->v6 == pl->out_v6)
		return 0;
	return bpf_skb_change_proto(skb, bpf_htons(pl->out_v6 ? ETH_P_IPV6 : ETH_P_IP), 0) ? -1 : 0;
}

/* Client -> peer: strip the ChannelData header. */
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
	if (flen > MAX_PAYLOAD)
		return pass(PASS_TOO_LARGE);
	pl.out_v6 = !!(v->flags & F_V6);
	pl.df = !!(v->flags & F_DF);
	if (!p->v6 && p->csum == 0 && pl.out_v6)
		return pass(PASS_NO_CHECKSUM);
	c = bpf_map_lookup_elem(&slots, &v->slot);
	if (!c)
		return pass(PASS_NO_SLOT);
	__builtin_memcpy(pl.src, v->relay, 16);
	__builtin_memcpy(pl.dst, v->peer, 16);
	__builtin_memcpy(pl.sport, v->relay_port, 2);
	__builtin_memcpy(pl.dport, v->peer_port, 2);
	pl.paylen = flen;
	r = route(skb, &pl);
	if (r >= 0)
		return pass(r);

	/* From here on the packet changes: a failure drops it. */
	udp_len = sizeof(struct udphdr) + flen;
	oiph = pl.out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	if (change_family(skb, p, &pl))
		return drop();
	if (move_down(skb, ETH_HLEN + oiph + sizeof(struct udphdr) + 4, flen))
		return drop();
	if (bpf_skb_change_tail(skb, ETH_HLEN + oiph + udp_len, 0))
		return drop();
	if (write_headers(skb, &pl, udp_len))
		return drop();
	if (fix_csum(skb, p, &pl, udp_len, p->chd, 0))
		return drop();
	c->to_peer_packets++;
	c->to_peer_bytes += flen;
	return bpf_redirect(pl.fib.ifindex, 0);
}

/* Peer -> client: prepend a ChannelData header. */
static __always_inline int to_client(struct __sk_buff *skb, struct pkt *p, struct down_val *v)
{
	struct plan pl = {};
	struct counters *c;
	__u32 plen = p->udp_len - sizeof(struct udphdr);
	__u32 udp_len, oiph, chd;
	int r;

	if (plen > MAX_PAYLOAD)
		return pass(PASS_TOO_LARGE);
	pl.out_v6 = !!(v->flags & F_V6);
	if (!p->v6 && p->csum == 0 && pl.out_v6)
		return pass(PASS_NO_CHECKSUM);
	c = bpf_map_lookup_elem(&slots, &v->slot);
	if (!c)
		return pass(PASS_NO_SLOT);
	__builtin_memcpy(pl.src, v->server, 16);
	__builtin_memcpy(pl.dst, v->client, 16);
	__builtin_memcpy(pl.sport, v->server_port, 2);
	__builtin_memcpy(pl.dport, v->client_port, 2);
	pl.paylen = plen + 4;
	r = route(skb, &pl);
	if (r >= 0)
		return pass(r);

	udp_len = sizeof(struct udphdr) + 4 + plen;
	oiph = pl.out_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	if (change_family(skb, p, &pl))
		return drop();
	if (bpf_skb_change_tail(skb, ETH_HLEN + oiph + udp_len, 0))
		return drop();
	if (move_up(skb, ETH_HLEN + oiph + sizeof(struct udphdr), plen))
		return drop();
	__u8 hdr[4] = {v->channel[0], v->channel[1], plen >> 8, plen & 0xff};

	__builtin_memcpy(&chd, hdr, 4);
	if (bpf_skb_store_bytes(skb, ETH_HLEN + oiph + sizeof(struct udphdr), &chd, 4, 0))
		return drop();
	if (write_headers(skb, &pl, udp_len))
		return drop();
	if (fix_csum(skb, p, &pl, udp_len, 0, chd))
		return drop();
	c->to_client_packets++;
	c->to_client_bytes += plen;
	return bpf_redirect(pl.fib.ifindex, 0);
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
			if (v)
				return to_peer(skb, &p, v);
		}
	}
	struct down_key dk = {};
	struct down_val *dv;

	__builtin_memcpy(dk.peer, p.src, 16);
	__builtin_memcpy(dk.relay, p.dst, 16);
	__builtin_memcpy(dk.peer_port, p.sport, 2);
	__builtin_memcpy(dk.relay_port, p.dport, 2);
	dv = bpf_map_lookup_elem(&downlink, &dk);
	if (dv)
		return to_client(skb, &p, dv);
	return pass(PASS_NO_ENTRY);
}
