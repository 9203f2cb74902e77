package httpapi_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

// serveLimited runs the API behind l on 127.0.0.1:0 and returns its address.
func serveLimited(t *testing.T, l httpapi.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := httpapi.NewServer(httpapi.New(httpapi.Options{Version: "test"}), l)
	done := make(chan struct{})
	go func() { _ = hs.Serve(httpapi.LimitListener(ln, l.MaxConns)); close(done) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return ln.Addr().String()
}

// keepAlive opens a connection and has one /healthz answered on it.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: turnd\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("keep-alive request: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return c
}

// closedWithin reports whether the server closes c within d; whatever it
// sends first is read and ignored.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

func testLimits() httpapi.Limits {
	l := httpapi.DefaultLimits()
	l.MaxConns = 1000
	return l
}

func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	l := testLimits()
	l.IdleTimeout = 200 * time.Millisecond
	addr := serveLimited(t, l)
	conns := make([]net.Conn, 300)
	for i := range conns {
		conns[i] = keepAlive(t, addr)
	}
	for i, c := range conns {
		if !closedWithin(c, 3*time.Second) {
			t.Fatalf("idle keep-alive connection %d still open 3s after its last answer", i)
		}
	}
}

func TestSlowBodyIsCut(t *testing.T) {
	l := testLimits()
	l.ReadTimeout = 300 * time.Millisecond
	addr := serveLimited(t, l)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: turnd\r\nContent-Length: 100000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan bool, 1)
	go func() { closed <- closedWithin(c, 5*time.Second) }()
	// One byte each 20 ms, for at most 4 s: far slower than any real client.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range 200 {
		select {
		case ok := <-closed:
			if !ok {
				t.Fatal("a request trickling its body was neither answered and closed nor cut")
			}
			return
		case <-tick.C:
			_, _ = c.Write([]byte{'x'})
		}
	}
	t.Fatal("a request trickling its body for 4s was not cut")
}

func TestConnectionCap(t *testing.T) {
	l := testLimits()
	l.MaxConns = 10
	addr := serveLimited(t, l)
	held := make([]net.Conn, l.MaxConns)
	for i := range held {
		held[i] = keepAlive(t, addr)
	}
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_, _ = io.WriteString(over, "GET /healthz HTTP/1.1\r\nHost: turnd\r\n\r\n")
	_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(over), nil); err == nil {
		resp.Body.Close()
		t.Fatalf("connection %d over a cap of %d was served: %s", l.MaxConns+1, l.MaxConns, resp.Status)
	}

	for _, c := range held {
		_ = c.Close()
	}
	// The server notices the closes on its own read loops, an event it does
	// not expose: retry until a deadline a loaded machine still meets.
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
				t.Fatalf("/healthz after the load: %d %q", resp.StatusCode, body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still refused 10 s after the held connections closed: %v", err)
		}
		<-tick.C
	}
}

// TestOversizedHeadersAre431: a request whose headers pass what probes and
// the admin API send is answered 431, not buffered; an ordinary admin
// request (a bearer token, an operator name) is served on the same limits.
func TestOversizedHeadersAre431(t *testing.T) {
	addr := serveLimited(t, httpapi.DefaultLimits())
	get := func(header string) int {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: turnd\r\n"+header+"\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("headers of %d B: %v", len(header), err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	ordinary := "Authorization: Bearer " + strings.Repeat("t", 64) + "\r\nX-Turnd-Operator: ops-alice\r\n" +
		"X-Padding: " + strings.Repeat("p", 2048) + "\r\n"
	if code := get(ordinary); code != http.StatusOK {
		t.Errorf("ordinary admin headers (%d B): %d, want 200", len(ordinary), code)
	}
	big := "X-Padding: " + strings.Repeat("p", 32<<10) + "\r\n"
	if code := get(big); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers of %d B: %d, want 431", len(big), code)
	}
}
