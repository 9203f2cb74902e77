package config

import "testing"

func TestParseTURNURI(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"turn:192.0.2.1", "turn:192.0.2.1:3478?transport=udp"},
		{"turn:192.0.2.1:3479?transport=tcp", "turn:192.0.2.1:3479?transport=tcp"},
		{"turns:turn.example.org", "turns:turn.example.org:5349?transport=tcp"},
		{"turn:[2001:db8::1]:3478", "turn:[2001:db8::1]:3478?transport=udp"},
	} {
		u, err := ParseTURNURI(c.in)
		if err != nil || u.String() != c.want {
			t.Errorf("ParseTURNURI(%q) = %v, %v; want %s", c.in, u, err, c.want)
		}
	}
	for _, bad := range []string{"", "stun:1.2.3.4", "turn:", "turn:1.2.3.4:x", "turn:1.2.3.4?transport=sctp", "turns:h?transport=udp", "turn:a@b"} {
		if _, err := ParseTURNURI(bad); err == nil {
			t.Errorf("ParseTURNURI(%q) succeeded", bad)
		}
	}
}
