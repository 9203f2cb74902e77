package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The namespace topology (docs/benchmarks.md): the client, turnd and the
// peer each in a network namespace of their own, joined by two veth pairs,
// with addresses from the benchmarking range 198.18.0.0/15 that exist only
// inside them:
//
//	client ns  c 198.18.1.2/24 ──veth── t 198.18.1.1/24  turnd ns
//	peer ns    p 198.18.2.2/24 ──veth── u 198.18.2.1/24  turnd ns
const (
	netnsPrefix   = "turnd-bench-"
	clientIP      = "198.18.1.2"
	turndClientIP = "198.18.1.1"
	turndRelayIP  = "198.18.2.1"
	peerIP        = "198.18.2.2"
	netnsPort     = 3478
	netnsPeerPort = 3480
	ipTimeout     = 10 * time.Second
)

// topology names one run's namespaces and veth ends. The names carry the
// runner's PID, so two runs never meet and a dead run's leftovers can be
// told apart (removeStaleTopologies).
type topology struct {
	client, turnd, peer string
	// c, t face each other (client side), u, p too (peer side).
	c, t, u, p string
}

func newTopology(pid int) topology {
	n := strconv.Itoa(pid)
	pre := netnsPrefix + n + "-"
	// Device names stay under 10 characters, so a NAPI thread's name
	// ("napi/<dev>-<id>", cut at 15) still holds the whole device name.
	return topology{client: pre + "client", turnd: pre + "turnd", peer: pre + "peer",
		c: "c" + n, t: "t" + n, u: "u" + n, p: "p" + n}
}

func (t topology) namespaces() []string { return []string{t.client, t.turnd, t.peer} }

// create builds the namespaces, links and routes; on failure it removes
// whatever it made.
func (t topology) create(ctx context.Context) error {
	steps := [][]string{
		{"netns", "add", t.client}, {"netns", "add", t.turnd}, {"netns", "add", t.peer},
		// Each end is created inside its namespace, so no name ever exists
		// in the runner's namespace.
		{"link", "add", t.t, "netns", t.turnd, "type", "veth", "peer", "name", t.c, "netns", t.client},
		{"link", "add", t.u, "netns", t.turnd, "type", "veth", "peer", "name", t.p, "netns", t.peer},
		{"-n", t.client, "addr", "add", clientIP + "/24", "dev", t.c},
		{"-n", t.turnd, "addr", "add", turndClientIP + "/24", "dev", t.t},
		{"-n", t.turnd, "addr", "add", turndRelayIP + "/24", "dev", t.u},
		{"-n", t.peer, "addr", "add", peerIP + "/24", "dev", t.p},
	}
	for _, ns := range t.namespaces() {
		steps = append(steps, []string{"-n", ns, "link", "set", "lo", "up"})
	}
	for _, d := range [][2]string{{t.client, t.c}, {t.turnd, t.t}, {t.turnd, t.u}, {t.peer, t.p}} {
		steps = append(steps, []string{"-n", d[0], "link", "set", d[1], "up"})
	}
	steps = append(steps,
		[]string{"-n", t.client, "route", "add", "default", "via", turndClientIP},
		[]string{"-n", t.peer, "route", "add", "default", "via", turndRelayIP})
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			t.remove()
			return err
		}
	}
	if err := forwardingOn(t.turnd); err != nil {
		t.remove()
		return err
	}
	return nil
}

// forwardingOn turns IP forwarding on for lo in ns, as the README tells
// operators to: the kernel path's route lookup (bpf_fib_lookup) is made
// through lo and needs it; the namespace routes nothing more than before.
func forwardingOn(ns string) error {
	return inNetns(ns, func() error {
		// /proc/sys/net shows the namespace of the thread that opens it.
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/lo/forwarding", []byte("1"), 0); err != nil {
			return fmt.Errorf("ipv4 forwarding in %s: %w", ns, err)
		}
		err := os.WriteFile("/proc/sys/net/ipv6/conf/lo/forwarding", []byte("1"), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ipv6 forwarding in %s: %w", ns, err)
		}
		return nil
	})
}

// remove deletes the namespaces, and with them the veths; absent ones are
// no error.
func (t topology) remove() {
	for _, ns := range t.namespaces() {
		if _, err := os.Stat(nsPath(ns)); err == nil {
			_ = ipCmd(context.Background(), "netns", "del", ns)
		}
	}
}

// removeStaleTopologies deletes the namespaces of earlier runs whose runner
// is gone (killed before it could clean up).
func removeStaleTopologies() []string {
	ents, _ := os.ReadDir("/run/netns")
	var removed []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), netnsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // its runner may still be using it
		}
		if ipCmd(context.Background(), "netns", "del", e.Name()) == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed
}

func nsPath(ns string) string { return filepath.Join("/run/netns", ns) }

// ipCmd runs ip(8) with args, bounded.
func ipCmd(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs fn on an OS thread moved into namespace ns. Sockets fn
// opens stay in ns wherever they are used later. The thread is never
// unlocked: it ends with its goroutine rather than carry ns back into the
// runtime's pool.
func inNetns(ns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(nsPath(ns))
		if err != nil {
			done <- fmt.Errorf("open namespace %s: %w", ns, err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter namespace %s: %w", ns, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// Legacy ethtool commands (linux/ethtool.h).
const (
	ethtoolSTSO = 0x1f
	ethtoolSGRO = 0x2c
)

// napiReceive makes dev's peer hand it datagrams through NAPI: a veth
// receives through NAPI only with GRO on, and takes a datagram from a local
// socket that way only if the sending end has no TSO (veth_xmit). TSO is
// for TCP; the datagrams here are UDP, so nothing else changes.
func napiReceive(ns, dev string) error {
	return inNetns(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("ethtool %s: socket: %w", dev, err)
		}
		defer unix.Close(fd)
		for _, c := range []struct{ cmd, data uint32 }{{ethtoolSTSO, 0}, {ethtoolSGRO, 1}} {
			if err := ethtoolSet(fd, dev, c.cmd, c.data); err != nil {
				return err
			}
		}
		return nil
	})
}

// ethtoolSet sends one legacy ethtool "set" command (struct ethtool_value).
func ethtoolSet(fd int, dev string, cmd, data uint32) error {
	val := &struct{ cmd, data uint32 }{cmd, data}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte // the rest of struct ifreq's union
	}
	copy(ifr.name[:], dev)
	ifr.data = uintptr(unsafe.Pointer(val))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(val)
	if errno != 0 {
		return fmt.Errorf("ethtool %s: command %#x: %w", dev, cmd, errno)
	}
	return nil
}

// threadedNAPI moves dev's receive processing into a kernel thread of its
// own (napi/<dev>-<id>) and returns that thread's PID. Without it a veth
// delivers in the sender's system call (netif_rx, then the softirq as the
// call leaves), and the kernel charges the receiver's whole path (on the
// kernel path, the tc program's relaying too) to the sending process: to
// the load generator.
func threadedNAPI(ctx context.Context, ns, dev string) (int, error) {
	if err := napiReceive(ns, dev); err != nil {
		return 0, err
	}
	// sysfs shows the namespace of whoever mounted it: ip netns exec mounts
	// the namespace's own.
	ctx, cancel := context.WithTimeout(ctx, ipTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /sys/class/net/"+dev+"/threaded")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("threaded napi on %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return findNAPIThread(dev)
}

var errNoNAPIThread = errors.New("no napi thread")

// findNAPIThread finds the kernel thread polling dev's receive queue.
func findNAPIThread(dev string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && isNAPIThreadOf(strings.TrimSpace(string(comm)), dev) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", dev, errNoNAPIThread)
}

func isNAPIThreadOf(comm, dev string) bool { return strings.HasPrefix(comm, "napi/"+dev+"-") }
