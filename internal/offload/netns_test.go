package offload

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests' own network namespaces are named ofl<pid><n>, so parallel runs
// and other packages' namespaces never meet.
var nsCounter atomic.Int32

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads a BPF program and makes network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip from iproute2")
	}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNS makes a namespace with lo up and forwarding on lo, deleted at cleanup.
func newNS(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("ofl%d%d", os.Getpid(), nsCounter.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	nsRun(t, name, "ip", "link", "set", "lo", "up")
	nsRun(t, name, "sysctl", "-qw", "net.ipv4.conf.lo.forwarding=1", "net.ipv6.conf.lo.forwarding=1")
	return name
}

func nsRun(t *testing.T, ns string, args ...string) {
	t.Helper()
	run(t, append([]string{"ip", "netns", "exec", ns}, args...)...)
}

// inNS runs fn on an OS thread that has joined namespace ns. The thread is
// never unlocked, so it exits with the goroutine and no other goroutine runs
// in that namespace by accident.
func inNS(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
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
