package server_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// TestReloadAppliesToNewRequests: a reload changes credentials, quotas and
// the lifetime cap for new requests; live allocations keep relaying.
func TestReloadAppliesToNewRequests(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	s := start(t, opts)
	peer := echoPeer(t)

	live := dial(t, s, "udp")
	live.MustAllocate()
	mustPermit(t, live, peer)
	if code := testturn.ErrorCode(dialAs(t, s, "udp", "alice", "wonderland").Allocate()); code != 401 {
		t.Fatalf("alice before the reload: code %d, want 401", code)
	}

	next := s.Config()
	next.Auth.Users = map[string]string{"demo": "demo", "alice": "wonderland"}
	next.Limits.UserAllocations = 1
	next.Limits.MaxLifetime = 20 * time.Minute
	restart, err := s.Reload(next)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if len(restart) != 0 {
		t.Errorf("restart needed for %q, want nothing", restart)
	}
	if got, want := obs.Reloads(), []bool{true}; !slices.Equal(got, want) {
		t.Errorf("Reloaded calls %v, want %v", got, want)
	}

	alice := dialAs(t, s, "udp", "alice", "wonderland")
	resp := alice.Allocate(testturn.Lifetime(time.Hour))
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("alice after the reload: code %d, want success", code)
	}
	if got := testturn.LifetimeOf(t, resp); got != 20*time.Minute {
		t.Errorf("lifetime %v, want the new cap of 20m", got)
	}
	if code := testturn.ErrorCode(dial(t, s, "tcp").Allocate()); code != 486 {
		t.Errorf("second allocation of demo under the new user quota: code %d, want 486", code)
	}
	// The allocation made before is untouched, over its quota or not.
	if code := live.Refresh(10 * time.Minute); code != 0 {
		t.Errorf("refresh of the live allocation: error %d", code)
	}
	mustEcho(t, live, peer, "after reload")
	if got := s.Config().Auth.Users; !reflect.DeepEqual(got, next.Auth.Users) {
		t.Errorf("Config().Auth.Users = %v, want %v", got, next.Auth.Users)
	}
}

// TestReloadRejected: a configuration apply cannot build changes nothing,
// even the parts of it that were fine.
func TestReloadRejected(t *testing.T) {
	tests := []struct {
		name    string
		break_  func(*config.Config)
		wantErr string
	}{
		// Validate reports these too, but Reload must not trust its caller.
		{"bad denied peer", func(c *config.Config) { c.Peers.Denied = []string{"10.0.0.300"} }, "build peer filter"},
		{"bad allowed range", func(c *config.Config) { c.Peers.Allowed = []string{"10.0.0.9-10.0.0.1"} }, "build peer filter"},
		{"alternate server not an address", func(c *config.Config) {
			c.Drain.AlternateServers = []string{"no-port"}
		}, "drain.alternate_servers[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &fakeObserver{}
			opts := testOptions()
			opts.Observer = obs
			s := start(t, opts)
			before := s.Config()

			next := s.Config()
			next.Auth.Users = map[string]string{"alice": "wonderland"}
			next.Limits.TotalAllocations = 1
			tt.break_(&next)
			if _, err := s.Reload(next); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("reload: err = %v, want one containing %q", err, tt.wantErr)
			}
			if got, want := obs.Reloads(), []bool{false}; !slices.Equal(got, want) {
				t.Errorf("Reloaded calls %v, want %v", got, want)
			}
			if got := s.Config(); !reflect.DeepEqual(got, before) {
				t.Errorf("config changed by a failed reload:\n got %+v\nwant %+v", got, before)
			}
			// Old credentials and quotas still rule.
			dial(t, s, "udp").MustAllocate()
			dial(t, s, "tcp").MustAllocate()
			if code := testturn.ErrorCode(dialAs(t, s, "udp", "alice", "wonderland").Allocate()); code != 401 {
				t.Errorf("alice after a failed reload: code %d, want 401", code)
			}
		})
	}
}

// TestReloadRestartNeeded: settings bound to sockets are reported and kept
// as they run; the rest of the same reload applies.
func TestReloadRestartNeeded(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	s := start(t, opts)
	addr := udpAddr(t, s)

	next := s.Config()
	next.Listen.UDP = []string{"127.0.0.1:1"}
	next.Listen.TCP = []string{"127.0.0.2:0"}
	next.Relay.MinPort = 50000
	next.Realm = "elsewhere"
	next.Auth.Users = map[string]string{"demo": "demo", "alice": "wonderland"}
	restart, err := s.Reload(next)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if want := []string{"realm", "listen.udp", "listen.tcp", "relay.min_port"}; !slices.Equal(restart, want) {
		t.Errorf("restart needed for %q, want %q", restart, want)
	}
	if got, want := obs.Reloads(), []bool{true}; !slices.Equal(got, want) {
		t.Errorf("Reloaded calls %v, want %v", got, want)
	}
	got := s.Config()
	if !slices.Equal(got.Listen.UDP, []string{"127.0.0.1:0"}) || !slices.Equal(got.Listen.TCP, []string{"127.0.0.1:0"}) ||
		got.Relay.MinPort != 49152 || got.Realm != "turnd.local" {
		t.Errorf("settings bound at start changed: listen %v %v, relay.min_port %d, realm %q",
			got.Listen.UDP, got.Listen.TCP, got.Relay.MinPort, got.Realm)
	}
	if a := udpAddr(t, s); a != addr {
		t.Errorf("UDP address %s after reload, want %s", a, addr)
	}
	// The runtime part applied, under the realm the server still runs.
	dialAs(t, s, "udp", "alice", "wonderland").MustAllocate()
}

// TestReloadFailed: a reload that failed before reaching the server is
// still reported.
func TestReloadFailed(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	s := start(t, opts)
	s.ReloadFailed()
	if got, want := obs.Reloads(), []bool{false}; !slices.Equal(got, want) {
		t.Errorf("Reloaded calls %v, want %v", got, want)
	}
}
