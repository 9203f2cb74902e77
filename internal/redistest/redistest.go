// Package redistest starts a redis-server of a test's own (the Debian
// package), on a unix socket in the test's directory or on a loopback
// port, and stops it by PID when the test ends. Tests only.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server this test started with no persistence and
// its own directory; it is stopped by PID at the test's end. It listens on
// a unix socket in that directory, which no other process can take between
// a restart and the next start; a test that needs TCP (TLS) gets a port.
type Server struct {
	t    *testing.T
	bin  string
	args []string
	Port int // the TCP port; 0 on a unix socket
	cmd  *exec.Cmd
	URL  string // unix://… or, with TCP, redis://127.0.0.1:port
}

// startAttempts bounds the retries of a TCP start whose free port another
// process took between freePort and the server's bind.
const startAttempts = 5

// Start starts a redis-server with extra arguments ("PORT" in them is
// a free TCP port, and makes it listen there instead of a unix socket);
// it skips the test only when the binary is missing.
func Start(t *testing.T, extra ...string) *Server {
	t.Helper()
	return StartOn(t, func() int { return FreePort(t) }, extra...)
}

// StartOn is Start with the source of TCP ports to try.
func StartOn(t *testing.T, ports func() int, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (Debian package redis-server; scripts/install-test-tools.sh)")
	}
	r := &Server{t: t, bin: bin}
	dir := t.TempDir()
	base := []string{"--bind", "127.0.0.1", "--port", "0", "--save", "", "--appendonly", "no", "--dir", dir}
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.Contains(a, "PORT") }) {
		sock := filepath.Join(dir, "redis.sock")
		r.args = append(append(base, "--unixsocket", sock, "--unixsocketperm", "700"), extra...)
		r.URL = "unix://" + sock
		if err := r.launch(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
		return r
	}
	for attempt := 1; ; attempt++ {
		r.Port = ports()
		r.args = append(slices.Clone(base), expandPort(extra, r.Port)...)
		r.URL = fmt.Sprintf("redis://127.0.0.1:%d", r.Port)
		err := r.launch()
		if err == nil {
			break
		}
		if !errors.Is(err, errAddrInUse) || attempt == startAttempts {
			t.Fatalf("start redis-server (attempt %d): %v", attempt, err)
		}
	}
	t.Cleanup(r.Stop)
	return r
}

// expandPort replaces "PORT" in args with the server's port.
func expandPort(args []string, port int) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "PORT", strconv.Itoa(port))
	}
	return out
}

// FreePort is a port free a moment ago: another process may take it
// before redis-server binds it, which Start retries.
func FreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// errAddrInUse is a redis-server that could not bind its port.
var errAddrInUse = errors.New("address already in use")

// Restart runs the server again on the same address (a restart).
func (r *Server) Restart() {
	r.t.Helper()
	if err := r.launch(); err != nil {
		r.t.Fatal(err)
	}
}

// launch runs the server and returns once its log says it accepts
// connections, or why it did not.
func (r *Server) launch() error {
	cmd := exec.Command(r.bin, r.args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var log []string
		inUse := false
		for sc.Scan() {
			log = append(log, sc.Text())
			inUse = inUse || strings.Contains(sc.Text(), "Address already in use")
			// "Ready to accept connections" on TCP, "The server is now
			// ready to accept connections at …" on a unix socket.
			if strings.Contains(strings.ToLower(sc.Text()), "ready to accept connections") {
				ready <- nil
				for sc.Scan() { // keep the pipe drained
				}
				return
			}
		}
		err := fmt.Errorf("redis-server exited before it was ready:\n%s", strings.Join(log, "\n"))
		if inUse {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			return err
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return errors.New("redis-server not ready within 10s")
	}
	r.cmd = cmd
	return nil
}

// Stop kills the server (by PID, as a crash would) and waits for it.
func (r *Server) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // a paused server must be able to die
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Pause and Resume freeze the server (SIGSTOP/SIGCONT): Redis slow, not gone.
func (r *Server) Pause()  { _ = r.cmd.Process.Signal(syscall.SIGSTOP) }
func (r *Server) Resume() { _ = r.cmd.Process.Signal(syscall.SIGCONT) }

// Admin is a plain client on the server for the test's own looks.
func (r *Server) Admin() *redis.Client {
	r.t.Helper()
	o, err := redis.ParseURL(r.URL)
	if err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(o)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}
