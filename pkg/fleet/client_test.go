package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testcert"
)

// TestOptions: Open refuses options it cannot use and fills in defaults;
// a Redis that is not there is not an error, only down.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no node", Options{URL: "redis://127.0.0.1:1"}},
		{"bad scheme", Options{URL: "http://127.0.0.1:1", Node: "a"}},
		{"TLS for redis://", Options{URL: "redis://127.0.0.1:1", Node: "a", TLS: testcert.New(t, 1).ClientConfig()}},
	} {
		if c, err := Open(context.Background(), tc.o); !errors.Is(err, ErrOptions) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("%s: Open = %v, want ErrOptions", tc.name, err)
		}
	}

	ch := make(changes, 4)
	absent := "unix://" + filepath.Join(t.TempDir(), "none.sock") // nothing listens there, nor will
	c, err := Open(context.Background(), Options{URL: absent, Node: "a", OnChange: ch.record})
	if err != nil {
		t.Fatalf("Open with Redis absent: %v", err)
	}
	defer c.Close()
	ch.next(t, false)
	if o := c.opt; o.Prefix != DefaultPrefix || o.Lease != DefaultLease || o.Timeout != DefaultTimeout || o.UsageMax != DefaultUsageMax {
		t.Errorf("defaults: %+v", o)
	}
	mustAdmit(t, c, "alice", 1, 0, ErrUnavailable)
}

// TestNodeNameAnyText: a node name Redis would refuse as a client name
// (spaces, non-ASCII) still connects.
func TestNodeNameAnyText(t *testing.T) {
	r := startRedis(t)
	c := r.open(Options{Node: "relay 1 · eu"})
	mustAdmit(t, c, "alice", 0, 0, nil)
}

// TestTLSAndACLUser: a rediss:// URL with an ACL user and password, and a
// private CA through Options.TLS, carries everything; the user's ACL
// allows only the prefix's keys and channels, so the Client touches no
// others. A wrong password or an untrusted certificate leaves it down.
func TestTLSAndACLUser(t *testing.T) {
	cert := testcert.New(t, 1)
	certFile, keyFile := cert.WriteFiles(t, t.TempDir())
	r := startRedis(t, "--tls-port", "PORT", "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-auth-clients", "no",
		"--user", "default", "off",
		"--user", "turnd", "on", ">s3cret", "~t:*", "&t:*", "+@all")
	url := fmt.Sprintf("rediss://turnd:s3cret@127.0.0.1:%d", r.Port)

	dis := make(disconnects, 2)
	a := r.open(Options{URL: url, Node: "a", TLS: cert.ClientConfig(), OnDisconnect: dis.record})
	b := r.open(Options{URL: url, Node: "b", TLS: cert.ClientConfig()})
	mustAdmit(t, a, "alice", 1, 0, nil)
	mustAdmit(t, b, "alice", 1, 0, ErrUserQuota)
	if err := b.Disconnect(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-dis:
		if got != [2]string{"alice", "b"} {
			t.Errorf("OnDisconnect%v", got)
		}
	case <-time.After(5 * time.Second):
		t.Error("no disconnect over TLS within 5s")
	}
	b.Usage(Record{Allocation: "x"})
	b.SetRevoked([]string{"eve"})
	if err := b.beat(ctxT(t)); err != nil {
		t.Fatalf("beat as the ACL user: %v", err)
	}
	if _, err := b.Nodes(ctxT(t)); err != nil {
		t.Fatalf("Nodes as the ACL user: %v", err)
	}
	if _, err := b.Sessions(ctxT(t)); err != nil {
		t.Fatalf("Sessions as the ACL user: %v", err)
	}
	eventually(t, 2*time.Second, "usage written over TLS", func() bool { return b.Stats().UsageQueued == 0 })
	if s := b.Stats(); !s.Up || s.Outages != 0 {
		t.Errorf("b after every kind of call: %+v (a refused command would have marked it down)", s)
	}

	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"wrong password", Options{URL: fmt.Sprintf("rediss://turnd:wrong@127.0.0.1:%d", r.Port), TLS: cert.ClientConfig()}},
		{"untrusted certificate", Options{URL: url}},
		{"plain text to TLS", Options{URL: fmt.Sprintf("redis://turnd:s3cret@127.0.0.1:%d", r.Port), Timeout: 100 * time.Millisecond}},
	} {
		ch := make(changes, 4)
		tc.o.Node, tc.o.OnChange = "x", ch.record
		c := r.open(tc.o)
		ch.next(t, false)
		mustAdmit(t, c, "alice", 0, 0, ErrUnavailable)
		_ = c.Close()
	}
}
