package fleet

import (
	"bufio"
	"context"
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

// redisServer is a redis-server this test started with no persistence and
// its own directory; it is stopped by PID at the test's end. It listens on
// a unix socket in that directory, which no other process can take between
// a restart and the next start; a test that needs TCP (TLS) gets a port.
type redisServer struct {
	t    *testing.T
	bin  string
	args []string
	port int // the TLS port; 0 on a unix socket
	cmd  *exec.Cmd
	url  string // unix://… or, with TCP, redis://127.0.0.1:port
}

// startAttempts bounds the retries of a TCP start whose free port another
// process took between freePort and the server's bind.
const startAttempts = 5

// startRedis starts a redis-server with extra arguments ("PORT" in them is
// a free TCP port, and makes it listen there instead of a unix socket);
// it skips the test only when the binary is missing.
func startRedis(t *testing.T, extra ...string) *redisServer {
	t.Helper()
	return startRedisOn(t, func() int { return freePort(t) }, extra...)
}

// startRedisOn is startRedis with the source of TCP ports to try.
func startRedisOn(t *testing.T, ports func() int, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (Debian package redis-server; scripts/install-test-tools.sh)")
	}
	r := &redisServer{t: t, bin: bin}
	dir := t.TempDir()
	base := []string{"--bind", "127.0.0.1", "--port", "0", "--save", "", "--appendonly", "no", "--dir", dir}
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.Contains(a, "PORT") }) {
		sock := filepath.Join(dir, "redis.sock")
		r.args = append(append(base, "--unixsocket", sock, "--unixsocketperm", "700"), extra...)
		r.url = "unix://" + sock
		if err := r.launch(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.stop)
		return r
	}
	for attempt := 1; ; attempt++ {
		r.port = ports()
		r.args = append(slices.Clone(base), expandPort(extra, r.port)...)
		r.url = fmt.Sprintf("redis://127.0.0.1:%d", r.port)
		err := r.launch()
		if err == nil {
			break
		}
		if !errors.Is(err, errAddrInUse) || attempt == startAttempts {
			t.Fatalf("start redis-server (attempt %d): %v", attempt, err)
		}
	}
	t.Cleanup(r.stop)
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

// freePort is a port free a moment ago: another process may take it
// before redis-server binds it, which startRedis retries.
func freePort(t *testing.T) int {
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

// start runs the server again on the same address (a restart).
func (r *redisServer) start() {
	r.t.Helper()
	if err := r.launch(); err != nil {
		r.t.Fatal(err)
	}
}

// launch runs the server and returns once its log says it accepts
// connections, or why it did not.
func (r *redisServer) launch() error {
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

// stop kills the server (by PID, as a crash would) and waits for it.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // a paused server must be able to die
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// pause and resume freeze the server (SIGSTOP/SIGCONT): Redis slow, not gone.
func (r *redisServer) pause()  { _ = r.cmd.Process.Signal(syscall.SIGSTOP) }
func (r *redisServer) resume() { _ = r.cmd.Process.Signal(syscall.SIGCONT) }

// admin is a plain client on the server for the test's own looks.
func (r *redisServer) admin() *redis.Client {
	r.t.Helper()
	o, err := redis.ParseURL(r.url)
	if err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(o)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// open starts a Client on the server with test-friendly defaults, unless o
// sets them: a short lease, and an Admit deadline a loaded runner meets
// (a test about that deadline sets its own). It is closed at the test's end.
func (r *redisServer) open(o Options) *Client {
	r.t.Helper()
	if o.URL == "" {
		o.URL = r.url
	}
	if o.Lease == 0 {
		o.Lease = testLease
	}
	if o.Timeout == 0 {
		o.Timeout = testTimeout
	}
	if o.Prefix == "" {
		o.Prefix = "t:"
	}
	c, err := Open(context.Background(), o)
	if err != nil {
		r.t.Fatalf("open %s: %v", o.Node, err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// testLease is short, so that lapses are waited for in well under a second.
const testLease = 600 * time.Millisecond

// testTimeout is Admit's deadline where the deadline is not the subject.
const testTimeout = 2 * time.Second

// eventually polls cond every few milliseconds until it holds, failing the
// test after within: for what Redis gets in the background, or a lease
// running out, there is no event to wait on.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustAdmit fails the test unless Admit returns want (errors.Is).
func mustAdmit(t *testing.T, c *Client, user string, userLimit, totalLimit int, want error) {
	t.Helper()
	err := c.Admit(ctxT(t), user, userLimit, totalLimit)
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: Admit(%s, %d, %d) = %v, want %v", c.Node(), user, userLimit, totalLimit, err, want)
	}
}
