package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"
)

// TestKernelPathFullChecksums: with checksum offload off on every veth end,
// senders write whole UDP checksums and receivers verify them in software
// (veth takes an unverified datagram as verified when the receiving end
// offloads), so a header the kernel path rewrites with a wrong checksum is
// dropped and counted. Every datagram must arrive, and no namespace count
// a checksum error. The default topology covers the other case: partial
// checksums, filled in later, that the kernel path must carry through.
func TestKernelPathFullChecksums(t *testing.T) {
	k := newKernelNet(t)
	for _, end := range []struct {
		ns  netns
		dev string
	}{{k.client, "c0"}, {k.turnd, "t0"}, {k.turnd, "t1"}, {k.peer, "p0"}} {
		for _, cmd := range []uint32{unix.ETHTOOL_STXCSUM, unix.ETHTOOL_SRXCSUM} {
			if err := end.ns.do(func() error { return ethtoolSet(end.dev, cmd, 0) }); err != nil {
				t.Fatalf("%s in %s: checksum offload off: %v", end.dev, end.ns, err)
			}
		}
	}
	requireVerified(t, k)
	before := map[netns]int{}
	for _, ns := range []netns{k.client, k.turnd, k.peer} {
		before[ns] = csumErrors(t, ns)
	}
	srv := k.start(t, kernelConfig(t), "tc")
	for _, tc := range []struct {
		name, client, server, peer string
		extra                      []stun.Setter
	}{
		{"v4", kClient4, kServer4, kPeer4, nil},
		{"v6", kClient6, kServer6, kPeer6, []stun.Setter{family6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := k.listenPeer(t, tc.peer)
			ch := k.openChannel(t, tc.client, net.JoinHostPort(tc.server, strconv.Itoa(kTURNPort)), peer, tc.extra...)
			ch.throughKernel(t, srv, payloads(tc.name, 60))
		})
	}
	for _, ns := range []netns{k.client, k.turnd, k.peer} {
		if n := csumErrors(t, ns) - before[ns]; n != 0 {
			t.Errorf("%s counted %d UDP checksum errors", ns, n)
		}
	}
}

// requireVerified proves the namespaces verify checksums: a datagram to
// turnd with a wrong checksum is counted as a checksum error where turnd
// runs.
func requireVerified(t *testing.T, k *kernelNet) {
	t.Helper()
	before := csumErrors(t, k.turnd)
	err := k.client.do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return fmt.Errorf("raw socket: %w", err)
		}
		defer unix.Close(fd)
		dgram := make([]byte, 8+4)
		binary.BigEndian.PutUint16(dgram[0:], 40000)
		binary.BigEndian.PutUint16(dgram[2:], kTURNPort)
		binary.BigEndian.PutUint16(dgram[4:], uint16(len(dgram)))
		copy(dgram[8:], "bad!")
		binary.BigEndian.PutUint16(dgram[6:], ^udp4Checksum(net.ParseIP(kClient4), net.ParseIP(kServer4), dgram))
		to := &unix.SockaddrInet4{}
		copy(to.Addr[:], net.ParseIP(kServer4).To4())
		return unix.Sendto(fd, dgram, 0, to)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 && csumErrors(t, k.turnd) == before; i++ {
		time.Sleep(20 * time.Millisecond) // a counter, no event: bounded poll
	}
	if csumErrors(t, k.turnd) == before {
		t.Fatal("a datagram with a wrong UDP checksum was not counted: the namespaces do not verify checksums")
	}
}

// udp4Checksum is the UDP checksum of dgram (its checksum field zero)
// from src to dst.
func udp4Checksum(src, dst net.IP, dgram []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(src.To4())
	add(dst.To4())
	add([]byte{0, unix.IPPROTO_UDP, byte(len(dgram) >> 8), byte(len(dgram))})
	add(dgram)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// csumErrors is the namespace's UDP and UDP6 InCsumErrors. It reads
// thread-self: /proc/net is the main thread's namespace.
func csumErrors(t *testing.T, ns netns) int {
	t.Helper()
	var snmp, snmp6 []byte
	if err := ns.do(func() (err error) {
		if snmp, err = os.ReadFile("/proc/thread-self/net/snmp"); err != nil {
			return err
		}
		snmp6, err = os.ReadFile("/proc/thread-self/net/snmp6")
		return err
	}); err != nil {
		t.Fatalf("read snmp counters in %s: %v", ns, err)
	}
	n := 0
	var names []string
	for _, l := range strings.Split(string(snmp), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f // the header line comes first
			continue
		}
		for i, name := range names {
			if name == "InCsumErrors" && i < len(f) {
				v, _ := strconv.Atoi(f[i])
				n += v
			}
		}
	}
	for _, l := range strings.Split(string(snmp6), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Udp6InCsumErrors" {
			v, _ := strconv.Atoi(f[1])
			n += v
		}
	}
	return n
}

// ethtoolSet runs a legacy ethtool set command (ETHTOOL_STXCSUM and the
// like) on dev in the calling thread's namespace.
func ethtoolSet(dev string, cmd, value uint32) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	v := struct{ cmd, data uint32 }{cmd, value}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte // the rest of struct ifreq's union
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(&v)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("ioctl SIOCETHTOOL %#x: %w", cmd, errno)
	}
	return nil
}
