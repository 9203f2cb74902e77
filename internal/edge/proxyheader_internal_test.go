package edge

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/pires/go-proxyproto"
)

// FuzzProxyHeader feeds arbitrary bytes to the PROXY header reader: it must
// not panic, must never read past a header it accepts (what follows belongs
// to the client's stream), and a header it accepts must name a TCP client
// or none.
func FuzzProxyHeader(f *testing.F) {
	src := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 40000}
	dst := &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 443}
	for _, v := range []byte{1, 2} {
		h, _ := proxyproto.HeaderProxyFromAddrs(v, src, dst).Format()
		f.Add(append(h, 0, 1, 0, 0))
	}
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add([]byte("PROXY TCP6 ::1 ::1 1 2\r\n\x16\x03\x01"))
	f.Add(append([]byte(v2Signature), 0x20, 0, 0, 0)) // LOCAL
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		h, err := readProxyHeader(r)
		if err != nil {
			return
		}
		used := len(data) - r.Len()
		if data[0] == '\r' && used != 16+int(binary.BigEndian.Uint16(data[14:16])) {
			t.Fatalf("v2 header: read %d bytes, header is %d", used, 16+int(binary.BigEndian.Uint16(data[14:16])))
		}
		if data[0] == 'P' && !bytes.HasSuffix(data[:used], []byte("\r\n")) {
			t.Fatalf("v1 header: read %q, past or short of its CRLF", data[:used])
		}
		if a, ok := clientOf(h); ok && (a.IP == nil || a.Port < 0 || a.Port > 65535) {
			t.Fatalf("client %v from an accepted header", a)
		}
	})
}

// TestProxyHeaderExact: the reader leaves the bytes after a header unread,
// for both versions, and tells a LOCAL header (a proxy's health check) from
// one that carries a client.
func TestProxyHeaderExact(t *testing.T) {
	src := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 40000}
	dst := &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 443}
	for _, v := range []byte{1, 2} {
		h, err := proxyproto.HeaderProxyFromAddrs(v, src, dst).Format()
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(append(h, "rest"...))
		got, err := readProxyHeader(r)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if r.Len() != len("rest") {
			t.Errorf("v%d: %d bytes left after the header, want 4", v, r.Len())
		}
		if a, ok := clientOf(got); !ok || a.String() != src.String() {
			t.Errorf("v%d: client %v %v, want %v", v, a, ok, src)
		}
	}
	local, err := (&proxyproto.Header{Version: 2, Command: proxyproto.LOCAL}).Format()
	if err != nil {
		t.Fatal(err)
	}
	got, err := readProxyHeader(bytes.NewReader(local))
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	if a, ok := clientOf(got); ok {
		t.Errorf("local header: client %v, want none", a)
	}
}
