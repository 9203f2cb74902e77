package offload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// datagram describes a test frame: Ethernet, IPv4 or IPv6, UDP.
type datagram struct {
	src, dst    netip.AddrPort
	payload     []byte
	ttl         uint8   // 0: 64
	ipOptions   bool    // IPv4 header with a 4-byte option
	frag        uint16  // IPv4 flags and fragment offset field
	extHeader   bool    // IPv6 destination options header before UDP
	zeroCsum    bool    // UDP checksum 0 (none, in IPv4)
	udpLenDelta int     // added to the UDP length field
	l2pad       int     // zero bytes after the IP datagram, as short Ethernet frames carry
	l2dst       [6]byte // destination MAC; zero: macA
}

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0xaa}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0xbb}
)

func sum16(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// udpChecksum is the checksum of udp (header with its checksum field and
// data) under the pseudo-header of src and dst; 0 means it verifies.
func udpChecksum(src, dst netip.Addr, udp []byte) uint16 {
	var s uint32
	s = sum16(src.AsSlice(), s)
	s = sum16(dst.AsSlice(), s)
	s += 17 + uint32(len(udp))
	return fold(sum16(udp, s))
}

func (d datagram) bytes() []byte {
	ttl := d.ttl
	if ttl == 0 {
		ttl = 64
	}
	udp := make([]byte, 8+len(d.payload))
	binary.BigEndian.PutUint16(udp[0:], d.src.Port())
	binary.BigEndian.PutUint16(udp[2:], d.dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)+d.udpLenDelta))
	copy(udp[8:], d.payload)
	// Not unmapped: a ::ffff: address makes an IPv6 header.
	src, dst := d.src.Addr(), d.dst.Addr()
	if !d.zeroCsum {
		binary.BigEndian.PutUint16(udp[6:], 0)
		c := udpChecksum(src, dst, udp)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(udp[6:], c)
	}
	l2dst := d.l2dst
	if l2dst == ([6]byte{}) {
		l2dst = macA
	}
	b := append([]byte{}, l2dst[:]...)
	b = append(b, macB[:]...)
	if src.Is4() {
		ihl := 5
		if d.ipOptions {
			ihl = 6
		}
		ip := make([]byte, ihl*4)
		ip[0] = 0x40 | byte(ihl)
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(udp)))
		binary.BigEndian.PutUint16(ip[4:], 0x1234)
		binary.BigEndian.PutUint16(ip[6:], d.frag)
		ip[8], ip[9] = ttl, 17
		copy(ip[12:], src.AsSlice())
		copy(ip[16:], dst.AsSlice())
		if d.ipOptions {
			ip[20] = 1 // NOP
		}
		binary.BigEndian.PutUint16(ip[10:], fold(sum16(ip, 0)))
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		b = append(b, ip...)
		return append(append(b, udp...), make([]byte, d.l2pad)...)
	}
	ip := make([]byte, 40)
	ip[0] = 0x60
	next := byte(17)
	var ext []byte
	if d.extHeader {
		next = 60
		ext = []byte{17, 0, 1, 4, 0, 0, 0, 0} // PadN
	}
	binary.BigEndian.PutUint16(ip[4:], uint16(len(ext)+len(udp)))
	ip[6], ip[7] = next, ttl
	copy(ip[8:], src.AsSlice())
	copy(ip[24:], dst.AsSlice())
	b = binary.BigEndian.AppendUint16(b, 0x86dd)
	b = append(b, ip...)
	b = append(b, ext...)
	return append(append(b, udp...), make([]byte, d.l2pad)...)
}

// frame is a parsed Ethernet frame the program sent, checked for lengths
// and both checksums.
type frame struct {
	ethDst, ethSrc [6]byte
	src, dst       netip.AddrPort
	ttl            uint8
	df             bool
	csumZero       bool
	payload        []byte
}

func parseFrame(b []byte) (frame, error) {
	var f frame
	if len(b) < 14 {
		return f, errors.New("short frame")
	}
	copy(f.ethDst[:], b[0:6])
	copy(f.ethSrc[:], b[6:12])
	var src, dst netip.Addr
	var udp []byte
	// By the IP version: the ethertype is the one the frame came with
	// (the kernel writes the new link-layer header after the program).
	if len(b) < 15 {
		return f, errors.New("no IP header")
	}
	switch b[14] >> 4 {
	case 4:
		ip := b[14:]
		if len(ip) < 20 || ip[0] != 0x45 {
			return f, fmt.Errorf("IPv4 header %x", ip[:1])
		}
		if fold(sum16(ip[:20], 0)) != 0 {
			return f, errors.New("bad IPv4 header checksum")
		}
		if int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			return f, fmt.Errorf("IPv4 total length %d, frame carries %d", binary.BigEndian.Uint16(ip[2:]), len(ip))
		}
		if ip[9] != 17 || ip[1] != 0 {
			return f, fmt.Errorf("IPv4 protocol %d tos %d", ip[9], ip[1])
		}
		flags := binary.BigEndian.Uint16(ip[6:])
		if flags&^0x4000 != 0 {
			return f, fmt.Errorf("IPv4 flags/offset %#x", flags)
		}
		f.df = flags&0x4000 != 0
		f.ttl = ip[8]
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		udp = ip[20:]
	case 6:
		ip := b[14:]
		if len(ip) < 40 || ip[0] != 0x60 || ip[1] != 0 || ip[2] != 0 || ip[3] != 0 {
			return f, fmt.Errorf("IPv6 header %x", ip[:4])
		}
		if int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) || ip[6] != 17 {
			return f, fmt.Errorf("IPv6 payload length %d next %d, frame carries %d", binary.BigEndian.Uint16(ip[4:]), ip[6], len(ip)-40)
		}
		f.ttl = ip[7]
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		udp = ip[40:]
	default:
		return f, fmt.Errorf("IP version %d", b[14]>>4)
	}
	if len(udp) < 8 || int(binary.BigEndian.Uint16(udp[4:])) != len(udp) {
		return f, fmt.Errorf("UDP length %d, datagram %d", binary.BigEndian.Uint16(udp[4:]), len(udp))
	}
	if binary.BigEndian.Uint16(udp[6:]) == 0 {
		if src.Is6() {
			return f, errors.New("IPv6 UDP checksum 0")
		}
		f.csumZero = true
	} else if c := udpChecksum(src, dst, udp); c != 0 {
		return f, fmt.Errorf("bad UDP checksum %#04x (off by %#04x)", binary.BigEndian.Uint16(udp[6:]), c)
	}
	f.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
	f.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	f.payload = udp[8:]
	return f, nil
}

// channelData frames payload for channel ch (RFC 8656 12.4), with pad zero
// bytes after it and the length field adjusted by lenDelta.
func channelData(ch uint16, payload []byte, pad, lenDelta int) []byte {
	b := binary.BigEndian.AppendUint16(nil, ch)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)+lenDelta))
	b = append(b, payload...)
	return append(b, make([]byte, pad)...)
}
