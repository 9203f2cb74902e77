package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr []string // substrings of the error; nil means success
		check   func(t *testing.T, o options)
	}{
		{name: "relay defaults", args: "relay", check: func(t *testing.T, o options) {
			if o.server.String() != "127.0.0.1:3478" || o.clients != 100 || o.rate != 10000 ||
				o.duration != 10*time.Second || o.size != 100 || o.peer != nil || o.sendIndications {
				t.Errorf("defaults: %+v", o)
			}
		}},
		{name: "relay flags", args: "relay --server 127.0.0.2:3479 --clients 7 --rate 2500 --duration 3s --size 160 --send-indications --peer 127.0.0.1:9000 --json --server-pid 42",
			check: func(t *testing.T, o options) {
				if o.server.Port != 3479 || o.clients != 7 || o.rate != 2500 || o.duration != 3*time.Second ||
					o.size != 160 || !o.sendIndications || o.peer.Port != 9000 || !o.json || o.serverPID != 42 {
					t.Errorf("flags: %+v", o)
				}
			}},
		{name: "ipv6 server", args: "alloc --server [::1]:3478", check: func(t *testing.T, o options) {
			if o.server.IP.String() != "::1" {
				t.Errorf("server %v", o.server)
			}
		}},
		{name: "no mode", args: "--clients 3", wantErr: []string{"mode"}},
		{name: "unknown mode", args: "flood", wantErr: []string{"mode"}},
		{name: "unknown flag", args: "relay --bogus", wantErr: []string{"bogus"}},
		{name: "stray argument", args: "relay extra", wantErr: []string{"unexpected"}},
		{name: "every problem at once", args: "relay --clients 0 --rate 0 --duration 5m --size 8",
			wantErr: []string{"--clients", "--rate", "--duration", "--size"}},
		{name: "name not IP", args: "relay --server localhost:3478", wantErr: []string{"--server", "IP literal"}},
		{name: "port zero", args: "relay --peer 127.0.0.1:0", wantErr: []string{"--peer", "port 0"}},
		{name: "idle refresh after lifetime", args: "idle --refresh 20m --lifetime 10m", wantErr: []string{"--refresh"}},
		{name: "idle ignores rate", args: "idle --rate 0 --duration 1h", check: func(t *testing.T, o options) {}},
		{name: "idle too long", args: "idle --duration 2h", wantErr: []string{"--duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseArgs(strings.Fields(tt.args), io.Discard)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tt.check(t, o)
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			if !errors.Is(err, errUsage) {
				t.Errorf("error %v is not errUsage", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
