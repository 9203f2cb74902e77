package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/pkg/config"
)

// netns is a network namespace the test made: a host of its own whose
// addresses exist only inside it.
type netns string

// requireNetns skips the test unless it may make network namespaces.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (ip netns add); CI runs this test as root")
	}
}

// addNetns makes a namespace named for the test and this process, with its
// loopback up, and deletes it at cleanup whatever the test's outcome;
// processes started in it later are stopped first (cleanups run last-in
// first-out).
func addNetns(t *testing.T, prefix string) netns {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	ns := netns(name)
	ns.ip(t, "link", "set", "lo", "up")
	return ns
}

// ip runs `ip -n NS args...`.
func (ns netns) ip(t *testing.T, args ...string) {
	t.Helper()
	full := append([]string{"-n", string(ns)}, args...)
	if out, err := exec.Command("ip", full...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(full, " "), err, out)
	}
}

// do runs fn on an OS thread switched into the namespace; sockets fn opens
// stay in it. The thread is never unlocked, so the runtime discards it.
func (ns netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
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

// startIn runs turnd on cfg inside the namespace. `ip netns exec` execs
// turnd, so the PID the harness signals is turnd's.
func startIn(t *testing.T, ns netns, cfg config.Config) *turnd {
	t.Helper()
	p, _ := launch(t, writeConfig(t, cfg), launchOptions{wrapper: []string{"ip", "netns", "exec", string(ns)}})
	return p
}

// get fetches url from inside the namespace (turnd's HTTP endpoint there).
func (ns netns) get(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = ns.do(func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
			return c, err
		},
	}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s in %s: %v", url, ns, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s in %s: %v", url, ns, err)
	}
	return string(body)
}
