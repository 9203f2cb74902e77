package offload

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

const (
	actNext     = 0xffffffff // TCX_NEXT (-1)
	actRedirect = 7
)

var (
	client4 = netip.MustParseAddrPort("198.18.1.2:5000")
	server4 = netip.MustParseAddrPort("198.18.1.1:3478")
	relay4  = netip.MustParseAddrPort("198.18.2.1:50000")
	peer4   = netip.MustParseAddrPort("198.18.2.2:6000")
	client6 = netip.MustParseAddrPort("[2001:db8:1::2]:5000")
	server6 = netip.MustParseAddrPort("[2001:db8:1::1]:3478")
	relay6  = netip.MustParseAddrPort("[2001:db8:2::1]:50000")
	peer6   = netip.MustParseAddrPort("[2001:db8:2::2]:6000")

	runMTU = 3500
)

// runEnv is a namespace with one veth end carrying both subnets and the
// program attached there, so bpf_fib_lookup in BPF_PROG_TEST_RUN finds
// routes. No neighbour is known: the program leaves them to the kernel.
type runEnv struct {
	ns      string
	path    *Path
	ifName  string
	ifIndex int
}

func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	return newRunEnvFault(t, 0)
}

// newRunEnvFault is a runEnv whose program has test hook fault on.
func newRunEnvFault(t *testing.T, fault uint32) *runEnv {
	t.Helper()
	requireRoot(t)
	e := &runEnv{ns: newNS(t), ifName: "ofa"}
	nsRun(t, e.ns, "ip", "link", "add", "ofa", "type", "veth", "peer", "name", "ofb")
	for _, a := range []string{"198.18.1.1/24", "198.18.2.1/24", "2001:db8:1::1/64", "2001:db8:2::1/64"} {
		nsRun(t, e.ns, "ip", "addr", "add", a, "dev", "ofa", "nodad")
	}
	// BPF_PROG_TEST_RUN takes frames up to about a page: an MTU below
	// that lets the tables reach it from both sides.
	// Frames are addressed to macA: the test run's skb arrives on ofa
	// (runCtx) as PACKET_HOST, as the stack would deliver it.
	nsRun(t, e.ns, "ip", "link", "set", "ofa", "address", net.HardwareAddr(macA[:]).String())
	nsRun(t, e.ns, "ip", "link", "set", "ofa", "mtu", strconv.Itoa(runMTU), "up")
	nsRun(t, e.ns, "ip", "link", "set", "ofb", "up")
	err := inNS(e.ns, func() error {
		ifc, err := net.InterfaceByName("ofa")
		if err != nil {
			return err
		}
		e.ifIndex = ifc.Index
		e.path, err = Open(Options{Interfaces: []string{"ofa"}, MaxEntries: 64, MaxSlots: 16, fault: fault})
		return err
	})
	if err != nil {
		t.Fatalf("open in %s: %v", e.ns, err)
	}
	t.Cleanup(func() { e.path.Close() })
	return e
}

// runCtx is the struct __sk_buff a test run starts from: arriving on ofa.
func (e *runEnv) runCtx() []byte {
	ctx := make([]byte, 192)
	binary.NativeEndian.PutUint32(ctx[40:], uint32(e.ifIndex)) // ifindex
	return ctx
}

// run runs the program once over frame in the namespace.
func (e *runEnv) run(t *testing.T, frame []byte) (uint32, []byte) {
	t.Helper()
	return e.runWith(t, frame, e.runCtx())
}

// runWith runs the program once over frame with the given context.
func (e *runEnv) runWith(t *testing.T, frame, ctx []byte) (uint32, []byte) {
	t.Helper()
	out := make([]byte, len(frame)+256)
	var ret uint32
	err := inNS(e.ns, func() error {
		opts := ebpf.RunOptions{Data: frame, DataOut: out, Context: ctx}
		var err error
		ret, err = e.path.objs.Relay.Run(&opts)
		out = opts.DataOut
		return err
	})
	if err != nil {
		t.Fatalf("run program: %v", err)
	}
	return ret, out
}

func (e *runEnv) put(t *testing.T, en Entry) Entry {
	t.Helper()
	s, err := e.path.NewSlot()
	if err != nil {
		t.Fatal(err)
	}
	en.Slot = s
	if err := e.path.Put(en); err != nil {
		t.Fatal(err)
	}
	return en
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// TestRunRelays checks the rewritten frames byte by byte: addresses, ports,
// lengths, TTL, DF on every IPv4 datagram whatever the entry's DontFragment,
// the Ethernet header left as it came (bpf_redirect_neigh replaces it) and
// both checksums, for each family and across families, both ways, and the
// counters.
func TestRunRelays(t *testing.T) {
	e := newRunEnv(t)
	cases := []struct {
		name                        string
		client, server, relay, peer netip.AddrPort
		df                          bool
		size                        int
	}{
		{"v4", client4, server4, relay4, peer4, false, 100},
		{"v4 df odd", client4, server4, relay4, peer4, true, 1001},
		{"v4 empty", client4, server4, relay4, peer4, false, 0},
		{"v4 large", client4, server4, relay4, peer4, false, runMTU - 32},
		{"v6 large", client6, server6, relay6, peer6, false, runMTU - 52},
		{"v6", client6, server6, relay6, peer6, false, 1200},
		{"v6 odd", client6, server6, relay6, peer6, false, 3},
		{"v4 client v6 peer", client4, server4, relay6, peer6, true, 517},
		{"v6 client v4 peer", client6, server6, relay4, peer4, false, 1024},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := uint16(0x4000 + i)
			en := e.put(t, Entry{Client: c.client, Server: c.server, Relay: c.relay, Peer: c.peer, Channel: ch, DontFragment: c.df})
			data := payload(c.size)

			in := datagram{src: c.client, dst: c.server, payload: channelData(ch, data, 0, 0)}.bytes()
			ret, out := e.run(t, in)
			if ret != actRedirect {
				t.Fatalf("uplink returned %d, want redirect; passed %v", ret, e.passed(t))
			}
			f, err := parseFrame(out)
			if err != nil {
				t.Fatalf("uplink frame: %v\n%x", err, out)
			}
			wantDF := c.peer.Addr().Is4()
			if f.src != c.relay || f.dst != c.peer || !bytes.Equal(f.payload, data) || f.ttl != 64 || f.df != wantDF ||
				f.ethDst != macA || f.ethSrc != macB {
				t.Errorf("uplink: %v -> %v ttl %d df %v eth %x<-%x payload %d bytes equal %v",
					f.src, f.dst, f.ttl, f.df, f.ethDst, f.ethSrc, len(f.payload), bytes.Equal(f.payload, data))
			}

			in = datagram{src: c.peer, dst: c.relay, payload: data}.bytes()
			ret, out = e.run(t, in)
			if ret != actRedirect {
				t.Fatalf("downlink returned %d, want redirect; passed %v", ret, e.passed(t))
			}
			f, err = parseFrame(out)
			if err != nil {
				t.Fatalf("downlink frame: %v\n%x", err, out)
			}
			if want := channelData(ch, data, 0, 0); f.src != c.server || f.dst != c.client || !bytes.Equal(f.payload, want) ||
				f.ttl != 64 || f.df != c.client.Addr().Is4() || f.ethDst != macA || f.ethSrc != macB {
				t.Errorf("downlink: %v -> %v ttl %d df %v eth %x<-%x payload %x", f.src, f.dst, f.ttl, f.df, f.ethDst, f.ethSrc, f.payload)
			}

			got, err := e.path.Count(en.Slot)
			if err != nil {
				t.Fatal(err)
			}
			n := uint64(c.size)
			if want := (Count{ToPeerPackets: 1, ToPeerBytes: n, ToClientPackets: 1, ToClientBytes: n}); got != want {
				t.Errorf("count %+v, want %+v", got, want)
			}
		})
	}
}

// TestRunZeroChecksum: an IPv4 datagram without a UDP checksum keeps none
// within IPv4, and goes up when it would become IPv6 (which needs one); an
// IPv6 one, which the stack would drop, goes up whatever it would become.
func TestRunZeroChecksum(t *testing.T) {
	e := newRunEnv(t)
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001})
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay6, Peer: peer6, Channel: 0x4002})
	in := datagram{src: client4, dst: server4, payload: channelData(0x4001, payload(40), 0, 0), zeroCsum: true}.bytes()
	ret, out := e.run(t, in)
	if ret != actRedirect {
		t.Fatalf("returned %d, want redirect", ret)
	}
	if f, err := parseFrame(out); err != nil || !f.csumZero {
		t.Errorf("frame %+v, %v: want a zero checksum kept", f, err)
	}
	in = datagram{src: client4, dst: server4, payload: channelData(0x4002, payload(40), 0, 0), zeroCsum: true}.bytes()
	e.expectPass(t, in, "no_checksum")

	e.put(t, Entry{Client: client6, Server: server6, Relay: relay6, Peer: peer6, Channel: 0x4003})
	e.put(t, Entry{Client: client6, Server: server6, Relay: relay4, Peer: peer4, Channel: 0x4004})
	for _, c := range []struct {
		name string
		in   datagram
	}{
		{"v6 uplink", datagram{src: client6, dst: server6, payload: channelData(0x4003, payload(40), 0, 0), zeroCsum: true}},
		{"v6 uplink to v4", datagram{src: client6, dst: server6, payload: channelData(0x4004, payload(40), 0, 0), zeroCsum: true}},
		{"v6 downlink", datagram{src: peer6, dst: relay6, payload: payload(40), zeroCsum: true}},
	} {
		t.Run(c.name, func(t *testing.T) { e.expectPass(t, c.in.bytes(), "no_checksum") })
	}
}

// TestRunEthernetPadding: a short frame padded to Ethernet's 60 bytes is
// relayed without its padding, whichever way its length changes (the
// downlink case grows into exactly the padded length).
func TestRunEthernetPadding(t *testing.T) {
	e := newRunEnv(t)
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001})
	for _, c := range []struct {
		name string
		in   datagram
		want []byte
	}{
		{"uplink", datagram{src: client4, dst: server4, payload: channelData(0x4001, payload(2), 0, 0), l2pad: 12}, payload(2)},
		{"downlink", datagram{src: peer4, dst: relay4, payload: payload(14), l2pad: 4}, channelData(0x4001, payload(14), 0, 0)},
	} {
		in := c.in.bytes()
		if len(in) != 60 {
			t.Fatalf("%s: test frame is %d bytes, want 60", c.name, len(in))
		}
		ret, out := e.run(t, in)
		if ret != actRedirect {
			t.Fatalf("%s returned %d", c.name, ret)
		}
		if f, err := parseFrame(out); err != nil || !bytes.Equal(f.payload, c.want) {
			t.Errorf("%s: %v, payload %x want %x", c.name, err, f.payload, c.want)
		}
	}
}

// TestRunGSO: a GSO skb (gso_size set, as the test run allows in its
// context) goes up unchanged.
func TestRunGSO(t *testing.T) {
	e := newRunEnv(t)
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001})
	in := datagram{src: client4, dst: server4, payload: channelData(0x4001, payload(100), 0, 0)}.bytes()
	ctx := e.runCtx()
	binary.NativeEndian.PutUint32(ctx[176:], 50) // gso_size
	binary.NativeEndian.PutUint32(ctx[164:], 2)  // gso_segs
	before := e.passed(t)["gso"]
	ret, out := e.runWith(t, in, ctx)
	if ret != actNext || !bytes.Equal(out, in) || e.passed(t)["gso"] != before+1 {
		t.Errorf("returned %d, unchanged %v, gso passes %d -> %d", ret, bytes.Equal(out, in), before, e.passed(t)["gso"])
	}
}

func (e *runEnv) passed(t *testing.T) map[string]uint64 {
	t.Helper()
	p, err := e.path.Passed()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// expectPass runs in and wants it back unchanged with TCX_NEXT, counted
// under reason.
func (e *runEnv) expectPass(t *testing.T, in []byte, reason string) {
	t.Helper()
	before := e.passed(t)
	ret, out := e.run(t, in)
	if ret != actNext {
		t.Errorf("returned %d, want TCX_NEXT", ret)
	}
	if !bytes.Equal(out, in) {
		t.Errorf("frame changed:\n in %x\nout %x", in, out)
	}
	after := e.passed(t)
	if after[reason] != before[reason]+1 {
		t.Errorf("pass reason %s went %d -> %d; all: %v", reason, before[reason], after[reason], after)
	}
}

// TestRunPasses: everything the program does not relay comes back
// unchanged with TCX_NEXT, counted under its reason.
func TestRunPasses(t *testing.T) {
	e := newRunEnv(t)
	const ch = 0x4001
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: ch})
	e.put(t, Entry{Client: client6, Server: server6, Relay: relay6, Peer: peer6, Channel: ch})
	// A peer the neighbour table has never seen is relayed: the kernel
	// resolves it while the datagram waits.
	noNeigh := netip.MustParseAddrPort("198.18.2.3:6000")
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: noNeigh, Channel: 0x4002})
	unrouted := netip.MustParseAddrPort("203.0.113.9:6000")
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: unrouted, Channel: 0x4003})

	// Clients user space would never hear from, each with an entry, so
	// only the source check keeps them from being relayed.
	martians := []string{"0.1.2.3", "127.0.0.2", "224.0.0.5", "239.255.0.1", "255.255.255.255", "::", "::1", "ff02::1", "ff0e::9"}
	for i, m := range martians {
		c := netip.AddrPortFrom(netip.MustParseAddr(m), 5000)
		s, r, pe := server4, relay4, peer4
		if c.Addr().Is6() {
			s, r, pe = server6, relay6, peer6
		}
		// A peer port of its own keeps the downlink entries above.
		pe = netip.AddrPortFrom(pe.Addr(), uint16(7000+i))
		e.put(t, Entry{Client: c, Server: s, Relay: r, Peer: pe, Channel: ch})
	}
	mapped := func(ap netip.AddrPort) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port())
	}

	up4 := func(p []byte) datagram { return datagram{src: client4, dst: server4, payload: p} }
	up6 := func(p []byte) datagram { return datagram{src: client6, dst: server6, payload: p} }
	cd := channelData(ch, payload(64), 0, 0)
	stun := append([]byte{0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42}, payload(12)...)
	send := append([]byte{0x00, 0x16, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42}, payload(12)...)
	arp := append(append(append([]byte{}, macA[:]...), macB[:]...), 0x08, 0x06)
	arp = append(arp, payload(28)...)

	cases := []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"padded", up4(channelData(ch, payload(5), 3, 0)).bytes(), "malformed"},
		{"length beyond payload", up4(channelData(ch, payload(8), 0, 1)).bytes(), "malformed"},
		{"length short of payload", up4(channelData(ch, payload(8), 0, -1)).bytes(), "malformed"},
		{"short payload", up4([]byte{0x40, 0x01, 0x00}).bytes(), "no_entry"},
		{"udp length wrong", datagram{src: client4, dst: server4, payload: cd, udpLenDelta: -1}.bytes(), "malformed"},
		{"stun", up4(stun).bytes(), "no_entry"},
		{"send indication", up4(send).bytes(), "no_entry"},
		{"channel 0x3fff", up4(channelData(0x3fff, payload(8), 0, 0)).bytes(), "no_entry"},
		{"channel 0x8000", up4(channelData(0x8000, payload(8), 0, 0)).bytes(), "no_entry"},
		{"unknown channel", up4(channelData(0x4abc, payload(8), 0, 0)).bytes(), "no_entry"},
		{"unknown peer", datagram{src: netip.MustParseAddrPort("198.18.2.2:6001"), dst: relay4, payload: payload(8)}.bytes(), "no_entry"},
		{"ip options", datagram{src: client4, dst: server4, payload: cd, ipOptions: true}.bytes(), "ip_options"},
		{"more fragments", datagram{src: client4, dst: server4, payload: cd, frag: 0x2000}.bytes(), "fragment"},
		{"fragment offset", datagram{src: client4, dst: server4, payload: cd, frag: 0x0010}.bytes(), "fragment"},
		{"ttl 1", datagram{src: client4, dst: server4, payload: cd, ttl: 1}.bytes(), "ttl"},
		{"hop limit 1", datagram{src: client6, dst: server6, payload: cd, ttl: 1}.bytes(), "ttl"},
		{"ipv6 extension header", datagram{src: client6, dst: server6, payload: cd, extHeader: true}.bytes(), "ipv6_ext"},
		{"v6 padded", up6(channelData(ch, payload(5), 3, 0)).bytes(), "malformed"},
		{"over mtu after header", datagram{src: peer4, dst: relay4, payload: payload(runMTU - 28)}.bytes(), "mtu"},
		{"v6 over mtu after header", datagram{src: peer6, dst: relay6, payload: payload(runMTU - 48)}.bytes(), "mtu"},
		{"no route", up4(channelData(0x4003, payload(8), 0, 0)).bytes(), "fib"},
		{"arp", arp, "not_ip"},
		{"other host", datagram{src: client4, dst: server4, payload: cd, l2dst: macB}.bytes(), "not_host"},
		{"broadcast", datagram{src: client4, dst: server4, payload: cd, l2dst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}.bytes(), "not_host"},
		{"multicast", datagram{src: client6, dst: server6, payload: cd, l2dst: [6]byte{0x33, 0x33, 0, 0, 0, 1}}.bytes(), "not_host"},
		{"v4-mapped both", datagram{src: mapped(client4), dst: mapped(server4), payload: cd}.bytes(), "v4_mapped"},
		{"v4-mapped source", datagram{src: mapped(client4), dst: server6, payload: cd}.bytes(), "v4_mapped"},
		{"v4-mapped destination", datagram{src: client6, dst: mapped(server4), payload: cd}.bytes(), "v4_mapped"},
		{"v4-mapped peer", datagram{src: mapped(peer4), dst: mapped(relay4), payload: payload(8)}.bytes(), "v4_mapped"},
	}
	for _, m := range martians {
		c := netip.AddrPortFrom(netip.MustParseAddr(m), 5000)
		s := server4
		if c.Addr().Is6() {
			s = server6
		}
		cases = append(cases, struct {
			name   string
			frame  []byte
			reason string
		}{"martian source " + m, datagram{src: c, dst: s, payload: cd}.bytes(), "martian"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { e.expectPass(t, c.frame, c.reason) })
	}
	// The frame just under the limit is relayed, so the mtu case above is
	// the limit and not something else.
	ret, _ := e.run(t, datagram{src: peer4, dst: relay4, payload: payload(runMTU - 32)}.bytes())
	if ret != actRedirect {
		t.Errorf("largest downlink returned %d, want redirect", ret)
	}
	if ret, _ := e.run(t, up4(channelData(0x4002, payload(8), 0, 0)).bytes()); ret != actRedirect {
		t.Errorf("datagram to a peer with no neighbour entry returned %d, want redirect", ret)
	}
	if n, max := len(strings.Fields(passReasons)), e.path.objs.Passed.MaxEntries(); n != int(max) {
		t.Errorf("%d pass reason names for %d counters", n, max)
	}
}
