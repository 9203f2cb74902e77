package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server this test started on 127.0.0.1 with a
// free port, no persistence, and its own directory; it is stopped by PID
// at the test's end.
type redisServer struct {
	t    *testing.T
	bin  string
	args []string
	port int
	cmd  *exec.Cmd
	url  string // redis://127.0.0.1:port
}

// startRedis starts a redis-server with extra arguments; it skips the test
// only when the binary is missing.
func startRedis(t *testing.T, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (Debian package redis-server; scripts/install-test-tools.sh)")
	}
	r := &redisServer{t: t, bin: bin, port: freePort(t)}
	portFlag := "--port"
	for _, a := range extra {
		if a == "--tls-port" {
			portFlag = "" // the caller names the TLS port; the plain one is off
		}
	}
	r.args = []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	if portFlag != "" {
		r.args = append(r.args, portFlag, strconv.Itoa(r.port))
	} else {
		r.args = append(r.args, "--port", "0")
	}
	r.args = append(r.args, expandPort(extra, r.port)...)
	r.url = fmt.Sprintf("redis://127.0.0.1:%d", r.port)
	r.start()
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the server (again, on the same port) and returns once its log
// says it accepts connections.
func (r *redisServer) start() {
	r.t.Helper()
	cmd := exec.Command(r.bin, r.args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var log []string
		for sc.Scan() {
			log = append(log, sc.Text())
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- nil
				for sc.Scan() { // keep the pipe drained
				}
				return
			}
		}
		ready <- fmt.Errorf("redis-server exited before it was ready:\n%s", strings.Join(log, "\n"))
	}()
	select {
	case err := <-ready:
		if err != nil {
			r.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		r.t.Fatal("redis-server not ready within 10s")
	}
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
