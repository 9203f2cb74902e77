package deploytest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netns is a network namespace made with `ip netns add`: a "host" of its own
// for tests that need several machines with the same ports; veth pairs join
// them, with addresses that exist only inside the namespaces.
type netns string

// requireNetns skips the test when network namespaces cannot be made here:
// they need root. As root (CI) the test runs, and a broken `ip` fails it.
func requireNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (ip netns add); CI runs this test as root")
	}
	return tool(t, "IP_BIN", "ip")
}

// addNetns creates a namespace with its loopback up and deletes it at
// cleanup, even when the test fails. Processes started in it must be
// stopped by cleanups registered later (they run first).
func addNetns(t *testing.T, ip, name string) netns {
	t.Helper()
	if _, stderr, err := run(nil, ip, "netns", "add", name); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, stderr)
	}
	t.Cleanup(func() {
		if _, stderr, err := run(nil, ip, "netns", "del", name); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, stderr)
		}
	})
	ns := netns(name)
	ns.ipCmd(t, ip, "link", "set", "lo", "up")
	return ns
}

// ipCmd runs `ip -n NS args...`.
func (ns netns) ipCmd(t *testing.T, ip string, args ...string) {
	t.Helper()
	full := append([]string{"-n", string(ns)}, args...)
	if _, stderr, err := run(nil, ip, full...); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(full, " "), err, stderr)
	}
}

// vethEnd is one end of a veth pair: its namespace, interface name and
// address with prefix length.
type vethEnd struct {
	ns   netns
	name string
	cidr string
}

// linkVeth joins two namespaces with a veth pair, each end addressed and up.
// The pair is created directly in the namespaces, so its names never touch
// the host's; it disappears with them.
func linkVeth(t *testing.T, ip string, a, b vethEnd) {
	t.Helper()
	if _, stderr, err := run(nil, ip, "link", "add", a.name, "netns", string(a.ns), "type", "veth",
		"peer", "name", b.name, "netns", string(b.ns)); err != nil {
		t.Fatalf("ip link add veth %s/%s: %v: %s", a.name, b.name, err, stderr)
	}
	for _, e := range []vethEnd{a, b} {
		e.ns.ipCmd(t, ip, "addr", "add", e.cidr, "dev", e.name)
		e.ns.ipCmd(t, ip, "link", "set", e.name, "up")
	}
}

// do runs fn on an OS thread switched into the namespace. Sockets fn opens
// belong to the namespace for their whole life, whichever thread uses them
// later. The thread stays locked and is discarded when the goroutine ends,
// so no other goroutine is ever scheduled in the namespace by mistake.
func (ns netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread with the goroutine
		f, err := os.Open("/run/netns/" + string(ns))
		if err != nil {
			errc <- fmt.Errorf("open netns: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// dial connects from inside the namespace.
func (ns netns) dial(network, addr string) (net.Conn, error) {
	return ns.dialContext(context.Background(), network, addr)
}

func (ns netns) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := ns.do(func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// listenPacket opens a packet socket inside the namespace.
func (ns netns) listenPacket(network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := ns.do(func() (err error) {
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

// httpClient makes its connections from inside the namespace, as a kubelet
// on the node or a monitoring system next to it would.
func (ns netns) httpClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: ns.dialContext, DisableKeepAlives: true},
	}
}
