package offload

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/turnd/turnd/internal/imports"
	"golang.org/x/sys/unix"
)

func TestImports(t *testing.T) {
	imports.Forbid(t, "github.com/turnd/turnd/internal/offload",
		"github.com/turnd/turnd/internal/relay", "github.com/turnd/turnd/internal/bindings",
		"github.com/turnd/turnd/pkg", "github.com/prometheus", "net/http")
}

// TestSlots: fresh slots first, then freed ones oldest first, none when all
// are in use, and a reused slot reads zero although it counted before.
func TestSlots(t *testing.T) {
	e := newRunEnv(t) // MaxSlots 16
	var got []uint32
	for range 16 {
		s, err := e.path.NewSlot()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if _, err := e.path.NewSlot(); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("seventeenth slot: %v, want ErrNoSlot", err)
	}
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("fresh slots %v, want 0..15", got)
		}
	}
	// Slot 5 counts one datagram, then goes back after slot 2.
	en := Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001, Slot: 5}
	if err := e.path.Put(en); err != nil {
		t.Fatal(err)
	}
	if ret, _ := e.run(t, datagram{src: peer4, dst: relay4, payload: payload(10)}.bytes()); ret != actRedirect {
		t.Fatalf("returned %d", ret)
	}
	if c, _ := e.path.Count(5); c.ToClientPackets != 1 {
		t.Fatalf("slot 5 counted %+v", c)
	}
	e.path.FreeSlot(2)
	e.path.FreeSlot(5)
	e.path.FreeSlot(5) // not in use any more: ignored
	for _, want := range []uint32{2, 5} {
		s, err := e.path.NewSlot()
		if err != nil || s != want {
			t.Fatalf("reused slot %d (%v), want %d", s, err, want)
		}
	}
	if _, err := e.path.NewSlot(); !errors.Is(err, ErrNoSlot) {
		t.Errorf("after reuse: %v, want ErrNoSlot", err)
	}
	if c, err := e.path.Count(5); err != nil || c != (Count{}) {
		t.Errorf("reused slot 5 reads %+v (%v), want zero", c, err)
	}
}

// TestOpenErrors: unusable interfaces, forwarding off on lo, and an Open
// that fails half-way leaves nothing attached.
func TestOpenErrors(t *testing.T) {
	e := newRunEnv(t)
	open := func(o Options) error {
		return inNS(e.ns, func() error {
			p, err := Open(o)
			if err == nil {
				p.Close()
			}
			return err
		})
	}
	for _, names := range [][]string{{"nope"}, {"lo"}} {
		if err := open(Options{Interfaces: names}); !errors.Is(err, ErrInterface) {
			t.Errorf("open on %v: %v, want ErrInterface", names, err)
		}
	}
	// ofa carries the runEnv's own link: the second attachment of this
	// Open to ofb succeeds, the third (ofb again) fails.
	if err := open(Options{Interfaces: []string{"ofb", "ofb"}}); err == nil {
		t.Fatal("open attaching twice to ofb succeeded")
	}
	if progs := ingressPrograms(t, e.ns, "ofb"); progs != 0 {
		t.Errorf("%d programs left on ofb after a failed Open", progs)
	}

	nsRun(t, e.ns, "sysctl", "-qw", "net.ipv4.conf.lo.forwarding=0")
	if err := open(Options{}); !errors.Is(err, ErrForwarding) || !errors.Is(err, ErrUnsupported) {
		t.Errorf("open with forwarding off: %v, want ErrForwarding", err)
	}
	if err := inNS(e.ns, Supported); !errors.Is(err, ErrForwarding) {
		t.Errorf("Supported with forwarding off: %v, want ErrForwarding", err)
	}
	nsRun(t, e.ns, "sysctl", "-qw", "net.ipv4.conf.lo.forwarding=1")
	if err := inNS(e.ns, Supported); err != nil {
		t.Errorf("Supported: %v", err)
	}
}

// TestClose: Close detaches (the interface has no program left), is
// idempotent, and every method says ErrClosed after it.
func TestClose(t *testing.T) {
	e := newRunEnv(t)
	if err := e.path.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.path.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if progs := ingressPrograms(t, e.ns, "ofa"); progs != 0 {
		t.Errorf("%d programs left on ofa after Close", progs)
	}
	en := Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001}
	if err := e.path.Put(en); !errors.Is(err, ErrClosed) {
		t.Errorf("Put: %v", err)
	}
	if err := e.path.Delete(en); !errors.Is(err, ErrClosed) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := e.path.NewSlot(); !errors.Is(err, ErrClosed) {
		t.Errorf("NewSlot: %v", err)
	}
	if _, err := e.path.Count(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Count: %v", err)
	}
	if _, err := e.path.Passed(); !errors.Is(err, ErrClosed) {
		t.Errorf("Passed: %v", err)
	}
}

// TestConcurrent exercises every method from several goroutines at once
// under the race detector, with Close racing the rest at the end.
func TestConcurrent(t *testing.T) {
	e := newRunEnv(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s, err := e.path.NewSlot()
				if err != nil {
					t.Error(err)
					return
				}
				en := Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4,
					Channel: uint16(0x4000 + g*100 + i), Slot: s}
				if err := e.path.Put(en); err != nil {
					t.Error(err)
				}
				if _, err := e.path.Count(s); err != nil {
					t.Error(err)
				}
				if err := e.path.Delete(en); err != nil {
					t.Error(err)
				}
				e.path.FreeSlot(s)
			}
		})
	}
	wg.Wait()
	if _, err := e.path.Passed(); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { e.path.Close() })
	wg.Go(func() { _, _ = e.path.Passed() })
	wg.Wait()
}

// TestSupportedWithoutPrivilege drops the capabilities on one locked thread
// (capabilities are per thread, and Go starts new threads from a clean one
// while a thread is locked) and wants Supported to name them.
func TestSupportedWithoutPrivilege(t *testing.T) {
	requireRoot(t)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with its lost capabilities
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		for _, c := range []uint{unix.CAP_BPF, unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN} {
			data[c/32].Effective &^= 1 << (c % 32)
		}
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		errc <- Supported()
	}()
	if err := <-errc; !errors.Is(err, ErrPrivilege) || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Supported without CAP_BPF and CAP_NET_ADMIN: %v, want ErrPrivilege", err)
	}
}

// ingressPrograms counts the TCX ingress programs on dev in namespace ns.
func ingressPrograms(t *testing.T, ns, dev string) int {
	t.Helper()
	var progs int
	if err := inNS(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		r, err := link.QueryPrograms(link.QueryOptions{Target: ifc.Index, Attach: ebpf.AttachTCXIngress})
		if err == nil {
			progs = len(r.Programs)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return progs
}
