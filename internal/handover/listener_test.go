package handover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestListenMakesPrivateSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "turnd", "handover.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if ln.Addr() != path {
		t.Errorf("Addr() = %q", ln.Addr())
	}
}

// A socket file left by a process that died is replaced.
func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handover.sock")
	dead, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	_ = dead.Close()
	ln, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	dialAccept(t, ln)
}

// A socket somebody answers on is left alone.
func TestListenLiveSocketInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handover.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen: %v; want ErrInUse", err)
	}
	dialAccept(t, ln) // still the first one's
	abs := fmt.Sprintf("@turnd-test/%d/in-use", os.Getpid())
	a, err := Listen(abs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := Listen(abs); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen on %s: %v; want ErrInUse", abs, err)
	}
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handover.sock")
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("Listen replaced a regular file")
	}
}

// The old process removes the socket file on exit only if it is still
// its own, not one a successor bound at the same path meanwhile.
func TestRemoveLeavesSuccessorsSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handover.sock")
	old, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	succ, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer succ.Close()
	if err := old.Remove(); err != nil {
		t.Fatal(err)
	}
	dialAccept(t, succ)
	if err := succ.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Close unlinked the socket: %v", err)
	}
	if err := succ.Remove(); err != nil { // after Close: unlinks nothing
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Remove after Close unlinked the socket: %v", err)
	}
	own, err := Listen(path) // replaces the stale file
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Remove left its own socket: %v", err)
	}
}

// A listener passed on keeps accepting in its new owner.
func TestFileListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handover.sock")
	old, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := old.File()
	if err != nil {
		t.Fatal(err)
	}
	succ, err := FileListener(f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer succ.Close()
	_ = old.Close()
	if succ.Addr() != path {
		t.Fatalf("Addr() = %q, want %q", succ.Addr(), path)
	}
	dialAccept(t, succ)
	if err := succ.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Remove left the adopted socket: %v", err)
	}
}

// dialAccept checks that ln answers: a hello reaches its Accept.
func dialAccept(t *testing.T, ln *Listener) {
	t.Helper()
	ctx := testCtx(t)
	got := make(chan error, 1)
	go func() {
		// Listen's probe of a live socket may be queued first.
		for range 3 {
			c, err := ln.Accept()
			if err != nil {
				got <- err
				return
			}
			_, err = c.ReadRequest(ctx)
			_ = c.Close()
			if !errors.Is(err, ErrClosed) {
				got <- err
				return
			}
		}
		got <- errors.New("no hello reached Accept")
	}()
	c, err := Dial(ctx, ln.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello([]int{1}, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		uid  uint32
		self int
		ok   bool
	}{{0, 1000, true}, {1000, 1000, true}, {1001, 1000, false}, {65534, 0, false}, {0, 0, true}} {
		if got := allowed(tc.uid, tc.self); got != tc.ok {
			t.Errorf("allowed(%d, self %d) = %v", tc.uid, tc.self, got)
		}
	}
}

const peerEnv = "HANDOVER_TEST_PEER"

// TestPeerHelper is the other user's side of TestPeerCredentials, run in
// a child process.
func TestPeerHelper(t *testing.T) {
	addr := os.Getenv(peerEnv)
	if addr == "" {
		t.Skip("run by TestPeerCredentials")
	}
	c, err := Dial(testCtx(t), addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ReceiveOffer(testCtx(t))
	fmt.Printf("uid %d: %v\n", os.Getuid(), err)
}

// A user other than root and turnd's own is turned away, and Accept goes
// on to the next connection.
func TestPeerCredentials(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a peer as another user")
	}
	checkGoroutines(t)
	bin := peerBinary(t)
	ln, err := Listen(fmt.Sprintf("@turnd-test/%d/peercred", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	refused := make(chan error, 1)
	ln.Refused = func(err error) { refused <- err }
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.Close()
		}
		accepted <- err
	}()

	cmd := exec.Command(bin, "-test.run=^TestPeerHelper$", "-test.v")
	cmd.Env = append(os.Environ(), peerEnv+"="+ln.Addr())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "uid 65534:") || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("peer as uid 65534 was not told permission denied:\n%s", out)
	}
	if err := <-refused; !errors.Is(err, errPeer) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("Refused heard %v", err)
	}
	// Accept returned nothing for it and takes the next peer, root.
	c, err := Dial(context.Background(), ln.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
}

// peerBinary copies the test binary where another user may run it.
func peerBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "handover-peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "handover.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestDialChecksTheListener: the process listening must be the one asked
// for; anyone can bind an abstract name first.
func TestDialChecksTheListener(t *testing.T) {
	ln, err := Listen("@turnd-test-dial-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c, err := Dial(testCtx(t), ln.Addr(), os.Getpid())
	if err != nil {
		t.Fatalf("dial the listener of this pid: %v", err)
	}
	c.Close()
	if c, err := Dial(testCtx(t), ln.Addr(), os.Getpid()+1); !errors.Is(err, errPeer) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial asking for another pid: %v, want errPeer", err)
	}
}
