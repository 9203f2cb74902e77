package config

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestEmbedded(t *testing.T) {
	// Parse, not Embedded, so a broken file fails here rather than panicking.
	got, err := Parse(EmbeddedYAML())
	if err != nil {
		t.Fatalf("embedded default.yaml: %v", err)
	}
	want := Default()
	want.Auth.Users = map[string]string{"demo": "demo"}
	want.Peers.AllowLoopback = true
	want.Relay.MinPort = 61000 // above the kernel's usual ephemeral range
	if !reflect.DeepEqual(got, want) {
		t.Errorf("embedded config differs from Default() beyond the demo user, loopback and relay.min_port:\n got %+v\nwant %+v", got, want)
	}
	if e := Embedded(); !reflect.DeepEqual(e, got) {
		t.Errorf("Embedded() = %+v, want %+v", e, got)
	}
}

func TestEmbeddedYAMLIsACopy(t *testing.T) {
	b := EmbeddedYAML()
	if !bytes.Contains(b, []byte("demo: demo")) {
		t.Fatalf("EmbeddedYAML() does not hold the demo user:\n%s", b)
	}
	b[0] = 'X'
	if EmbeddedYAML()[0] == 'X' {
		t.Error("EmbeddedYAML returns the embedded bytes themselves")
	}
}

// TestEmbeddedDocumentsEveryKey keeps the embedded file useful as an
// example: every key must appear in it, set or commented out.
func TestEmbeddedDocumentsEveryKey(t *testing.T) {
	text := string(EmbeddedYAML())
	for _, path := range keyPaths(reflect.TypeFor[Config](), "") {
		key := path[strings.LastIndex(path, ".")+1:] + ":"
		if !strings.Contains(text, key) {
			t.Errorf("default.yaml does not mention %s", path)
		}
	}
}
