package main

import (
	"io"
	"strings"
	"testing"
)

// TestParseStreamArgs: stream mode may hold no idle allocation (--clients
// 0, which other modes refuse) and bounds its one stream's rate.
func TestParseStreamArgs(t *testing.T) {
	for _, tc := range []struct {
		args    string
		wantErr string // "" means success
	}{
		{"stream --clients 0 --rate 200 --duration 8s", ""},
		{"stream --clients 10000", ""}, // at the stream's own default rate
		{"relay --clients 0", "--clients"},
		{"stream --clients 15000", "--clients"},
		{"stream --rate 6000", "--rate"},
		{"stream --duration 5m", "--duration"},
	} {
		o, err := parseArgs(strings.Fields(tc.args), io.Discard)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one naming %s", tc.args, err, tc.wantErr)
		case err == nil && o.mode == modeStream && o.rate != defaultStreamRate:
			t.Errorf("%s: rate %v, want %d", tc.args, o.rate, defaultStreamRate)
		}
	}
}
