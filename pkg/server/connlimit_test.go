package server_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// dialTCPFrom connects to the server's TCP listener from ip and reports
// whether a STUN Binding is answered on the connection (false: the server
// closed it on accept). The connection stays open until the test ends.
func dialTCPFrom(t *testing.T, s *server.Server, ip string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", tcpAddr(t, s))
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	if _, err := c.Write(req.Raw); err != nil {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return err == nil && n >= 20
}

// TestConnectionCaps: one address cannot hold more than connections_per_ip
// TCP connections, so another address still gets in and allocates; all
// addresses together stop at connections. Each refusal is counted.
func TestConnectionCaps(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	opts.Config.Limits.ConnectionsPerIP = 5
	opts.Config.Limits.Connections = 8
	s := start(t, opts)

	served := 0
	for range 10 {
		if dialTCPFrom(t, s, "127.0.0.1") {
			served++
		}
	}
	if served != 5 {
		t.Fatalf("127.0.0.1 got %d of 10 connections served, want 5", served)
	}
	other := testturn.DialFrom(t, "tcp", "127.0.0.2:0", tcpAddr(t, s), "demo", "demo")
	other.MustAllocate()

	served = 0
	for range 3 {
		if dialTCPFrom(t, s, "127.0.0.3") {
			served++
		}
	}
	if served != 2 {
		t.Fatalf("with 6 of 8 connections open, a third address got %d of 3 served, want 2", served)
	}
	want := []string{"per_ip", "per_ip", "per_ip", "per_ip", "per_ip", "total"}
	if got := obs.RefusedConns(); !slices.Equal(got, want) {
		t.Fatalf("refusals counted %v, want %v", got, want)
	}
}
