package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// socketOwners returns which of procs hold a socket of proto ("udp" or
// "tcp") bound to local and, when remote is not empty, connected to
// remote: the kernel's view of which process serves an address, from
// /proc/net and each process's descriptors.
func socketOwners(t *testing.T, proto, local, remote string, procs ...*proc) []int {
	t.Helper()
	inodes := socketInodes(t, proto, local, remote)
	if len(inodes) == 0 {
		t.Fatalf("no %s socket on %s (remote %q) in /proc/net", proto, local, remote)
	}
	var owners []int
	for _, p := range procs {
		if heldBy(p, inodes) > 0 {
			owners = append(owners, p.pid)
		}
	}
	return owners
}

// socketsHeld is how many sockets of proto bound to local p holds (a
// SO_REUSEPORT group has several).
func socketsHeld(t *testing.T, proto, local string, p *proc) int {
	t.Helper()
	return heldBy(p, socketInodes(t, proto, local, ""))
}

// heldBy is how many of the sockets inodes names p holds.
func heldBy(p *proc, inodes map[string]bool) int {
	if p.exited() {
		return 0
	}
	n := 0
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(p.pid) + "/fd") // a process exiting meanwhile holds nothing
	for _, fd := range fds {
		link, _ := os.Readlink("/proc/" + strconv.Itoa(p.pid) + "/fd/" + fd.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}

// socketInodes returns the inodes of the sockets socketOwners looks for.
func socketInodes(t *testing.T, proto, local, remote string) map[string]bool {
	t.Helper()
	file := proto
	if ap, err := netip.ParseAddrPort(local); err == nil && ap.Addr().Is6() {
		file += "6"
	}
	b, err := readProcNet(file)
	if err != nil {
		t.Fatal(err)
	}
	wantLocal, wantRemote := procNetAddr(t, local), ""
	if remote != "" {
		wantRemote = procNetAddr(t, remote)
	}
	inodes := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[1] != wantLocal || (wantRemote != "" && f[2] != wantRemote) {
			continue
		}
		inodes[f[9]] = true
	}
	return inodes
}

// procNetAddr is addr ("127.0.0.1:3478", "[::1]:3478") as /proc/net/udp,
// tcp, udp6 and tcp6 write it: the address as 32-bit little-endian words
// in hex, then the port. An IPv4 address and an IPv4-mapped one are the
// same socket address, written in the file of their own family.
func procNetAddr(t *testing.T, addr string) string {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	var b []byte
	if ap.Addr().Is4() {
		a := ap.Addr().As4()
		b = a[:]
	} else {
		a := ap.Addr().As16()
		b = a[:]
	}
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%02X%02X%02X%02X", b[i+3], b[i+2], b[i+1], b[i])
	}
	return fmt.Sprintf("%s:%04X", s.String(), ap.Port())
}

// requireOwner fails unless want, alone among procs, holds the socket, once
// the hand-over has settled: the old process closes what moved just after
// it commits, and no event says when a descriptor is closed, so this polls
// (bounded: 2 s).
func requireOwner(t *testing.T, what, proto, local, remote string, want *proc, procs ...*proc) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Second)
	for {
		owners := socketOwners(t, proto, local, remote, procs...)
		if slices.Equal(owners, []int{want.pid}) {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Errorf("%s (%s %s): held by %v, want %d alone", what, proto, local, owners, want.pid)
			return
		}
	}
}

// rcvbufErrors is the kernel's count of UDP datagrams dropped on a full
// receive buffer, IPv4 (/proc/net/snmp) and IPv6 (/proc/net/snmp6): the
// kernel queues what arrives while neither process reads, and those queues
// must not overflow.
type rcvbufErrors struct{ udp, udp6 int64 }

func readRcvbufErrors(t *testing.T) rcvbufErrors {
	t.Helper()
	var r rcvbufErrors
	b, err := readProcNet("snmp")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	found := false
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "Udp:" || len(values) != len(names) || values[0] != "Udp:" {
			continue
		}
		if j := slices.Index(names, "RcvbufErrors"); j > 0 {
			r.udp, _ = strconv.ParseInt(values[j], 10, 64)
			found = true
		}
		break
	}
	if !found {
		t.Fatal("no Udp: RcvbufErrors in /proc/net/snmp")
	}
	if b, err = readProcNet("snmp6"); err != nil {
		return r // a kernel without IPv6 counts no IPv6 drops
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Udp6RcvbufErrors" {
			r.udp6, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return r
}
