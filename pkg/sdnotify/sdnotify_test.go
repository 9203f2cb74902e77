package sdnotify

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// listen opens a fake systemd notification socket and returns its name.
func listen(t *testing.T, abstract bool) (string, *net.UnixConn) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify.sock")
	if abstract {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		name = "@turnd-sdnotify-test-" + hex.EncodeToString(b)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	return name, conn
}

// receive reads one datagram; the deadline only guards against a hang when
// nothing was sent, it is not a synchronisation sleep.
func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("read notification: %v", err)
	}
	return string(buf[:n])
}

func TestNotifierSendsExactState(t *testing.T) {
	cases := []struct {
		name string
		send func(*Notifier) error
		want string
	}{
		{"ready", (*Notifier).Ready, "READY=1"},
		{"stopping", (*Notifier).Stopping, "STOPPING=1"},
		{"status", func(n *Notifier) error { return n.Status("draining: 12 allocations left") }, "STATUS=draining: 12 allocations left"},
		{"status empty", func(n *Notifier) error { return n.Status("") }, "STATUS="},
		{"notify many", func(n *Notifier) error { return n.Notify("STOPPING=1\nSTATUS=draining") }, "STOPPING=1\nSTATUS=draining"},
	}
	for _, abstract := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name
			if abstract {
				name += " abstract"
			}
			t.Run(name, func(t *testing.T) {
				socket, conn := listen(t, abstract)
				t.Setenv(EnvSocket, socket)
				n := FromEnv()
				if n == nil {
					t.Fatal("FromEnv returned nil with NOTIFY_SOCKET set")
				}
				if err := tc.send(n); err != nil {
					t.Fatalf("send: %v", err)
				}
				if got := receive(t, conn); got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
}

func TestNotifierWithoutSocketIsNoOp(t *testing.T) {
	t.Setenv(EnvSocket, "")
	n := FromEnv()
	if n != nil {
		t.Fatalf("FromEnv with empty NOTIFY_SOCKET = %+v, want nil", n)
	}
	for _, err := range []error{n.Ready(), n.Stopping(), n.Status("x"), n.Notify("READY=1")} {
		if err != nil {
			t.Errorf("nil notifier returned %v", err)
		}
	}
}

func TestNotifierErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.sock")
	cases := []struct {
		name   string
		socket string
		send   func(*Notifier) error
		want   error // nil: any error
	}{
		{"newline in status", missing, func(n *Notifier) error { return n.Status("a\nREADY=1") }, ErrBadState},
		{"empty state", missing, func(n *Notifier) error { return n.Notify("") }, ErrBadState},
		{"vsock", "vsock:2:1234", (*Notifier).Ready, ErrUnsupportedSocket},
		{"no listener", missing, (*Notifier).Ready, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.send(New(tc.socket))
			if err == nil {
				t.Fatal("want an error, got nil")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}
