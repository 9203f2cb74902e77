package config

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestDefault pins Default to the values the field doc comments promise.
func TestDefault(t *testing.T) {
	want := Config{
		Realm:  "turnd.local",
		Listen: Listen{UDP: []string{"127.0.0.1:3478"}, TCP: []string{"127.0.0.1:3478"}, SocketBuffer: 4 << 20},
		Relay:  Relay{MinPort: 49152, MaxPort: 65535, TCPAllocations: true, Offload: "off"},
		Auth:   Auth{RESTSeparator: ":", MaxRESTValidity: 168 * time.Hour},
		Limits: Limits{MaxLifetime: time.Hour, PermissionLifetime: 5 * time.Minute, ChannelLifetime: 10 * time.Minute,
			UserAllocations: 128, IPAllocations: 256, PrefixAllocations: 2048,
			ConnectionsPerIP: 128, ConnectionsPerPrefix: 2048, Connections: 16384,
			PermissionsPerAllocation: 64, ChannelsPerAllocation: 64, UnauthenticatedRate: 50, UserAllocateRate: 64,
			IdleConnectionTimeout: 30 * time.Second},
		Drain:    Drain{Timeout: time.Hour},
		Handover: Handover{Timeout: 10 * time.Second, After: "exit"},
		HTTP:     HTTP{Address: "127.0.0.1:9641"},
		Log:      Log{Level: "info", Format: "text"},
		Fleet: Fleet{Prefix: "turnd:", Lease: 10 * time.Second, Timeout: 250 * time.Millisecond, OnOutage: "local",
			Credentials: FleetCredentials{TTL: time.Hour, Nodes: 3}},
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() =\n %+v\nwant\n %+v", got, want)
	}
}

func TestDefaultReturnsFreshSlices(t *testing.T) {
	d := Default()
	d.Listen.UDP[0] = "changed"
	if Default().Listen.UDP[0] != "127.0.0.1:3478" {
		t.Error("Default shares slices between calls")
	}
}

// TestDefaultNeedsOnlyCredentials checks that the defaults are valid except
// for the one thing that has none: credentials.
func TestDefaultNeedsOnlyCredentials(t *testing.T) {
	var ve *ValidationError
	if err := Default().Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Path != "auth" {
		t.Fatalf("Default().Validate() = %v, want only the auth problem", err)
	}
	d := Default()
	d.Auth.Secrets = []string{"s"}
	if err := d.Validate(); err != nil {
		t.Errorf("Default() with a secret: %v", err)
	}
}
