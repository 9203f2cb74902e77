/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* parse.h: reads an IPv4 or IPv6 UDP datagram's headers and says whether it
 * is one the program could relay, without writing to the packet. */
#pragma once

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "maps.h"

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

/* Sources user space would never see: the stack drops them on input
 * (RFC 1122 3.2.1.3 for IPv4; RFC 4291 2.5.2, 2.5.3, 2.7 for IPv6). */
static __always_inline int martian4(__be32 a)
{
	__u32 h = bpf_ntohl(a);

	return (h >> 24) == 0 || (h >> 24) == 127 || (h >> 28) == 0xe || h == 0xffffffff;
}

static __always_inline int v4mapped(const struct in6_addr *a)
{
	return !a->in6_u.u6_addr32[0] && !a->in6_u.u6_addr32[1] && a->in6_u.u6_addr32[2] == bpf_htonl(0xffff);
}

static __always_inline int martian6(const struct in6_addr *a)
{
	const __u32 *w = a->in6_u.u6_addr32;

	if (a->in6_u.u6_addr8[0] == 0xff)
		return 1;
	return !(w[0] | w[1] | w[2]) && (!w[3] || w[3] == bpf_htonl(1));
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
	/* Broadcast, multicast and other hosts' frames are not delivered
	 * locally, so user space would never relay them. */
	if (skb->pkt_type != PACKET_HOST)
		return PASS_NOT_HOST;
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
		if (martian4(ip.saddr))
			return PASS_MARTIAN;
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
		/* The keys hold IPv4 as ::ffff:a.b.c.d: such an IPv6 packet
		 * would match an IPv4 entry. */
		if (v4mapped(&ip6.saddr) || v4mapped(&ip6.daddr))
			return PASS_V4_MAPPED;
		if (martian6(&ip6.saddr))
			return PASS_MARTIAN;
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
	/* RFC 8200 8.1: the stack drops IPv6 UDP without a checksum, and
	 * relayed as IPv4 it would arrive as "no checksum" instead. */
	if (p->v6 && !udp.check)
		return PASS_NO_CHECKSUM;
	p->udp_len = l4len;
	p->csum = udp.check;
	if (l4len >= sizeof(udp) + 4 &&
	    bpf_skb_load_bytes(skb, ETH_HLEN + p->iph_len + sizeof(udp), &p->chd, 4))
		return PASS_MALFORMED;
	return -1;
}
