package config

import (
	"errors"
	"strings"
	"testing"
)

func TestExpandAddressesFromEnvironment(t *testing.T) {
	env := map[string]string{"NODE_IP": "192.0.2.10", "NODE_IP6": "2001:db8::1", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	yaml := `
listen: {udp: ["${NODE_IP}:3478"], tcp: ["[${NODE_IP6}]:3478"]}
relay: {address: "${NODE_IP}", external_address: "203.0.113.5"}
http: {address: "${NODE_IP}:9641"}
auth: {users: {u: "p${NODE_IP}"}}
`
	cfg, err := parse([]byte(yaml), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen.UDP[0] != "192.0.2.10:3478" || cfg.Listen.TCP[0] != "[2001:db8::1]:3478" ||
		cfg.Relay.Address != "192.0.2.10" || cfg.HTTP.Address != "192.0.2.10:9641" {
		t.Fatalf("not expanded: %+v %+v %+v", cfg.Listen, cfg.Relay, cfg.HTTP)
	}
	if cfg.Auth.Users["u"] != "p${NODE_IP}" {
		t.Fatalf("a credential was expanded: %q", cfg.Auth.Users["u"])
	}

	_, err = parse([]byte(`listen: {udp: ["${MISSING}:3478", "${EMPTY}:1"]}`+"\nauth: {users: {u: p}}\n"), lookup)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("missing variables: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"listen.udp[0]: environment variable MISSING is not set", "listen.udp[1]: environment variable EMPTY is not set"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Count(msg, "listen.udp[0]") != 1 {
		t.Errorf("listen.udp[0] reported more than once:\n%s", msg)
	}
}
