package edge_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// pipeListener hands out one end of a net.Pipe, once.
type pipeListener struct{ conn net.Conn }

func (l *pipeListener) Accept() (net.Conn, error) {
	c := l.conn
	if c == nil {
		return nil, net.ErrClosed
	}
	l.conn = nil
	return c, nil
}
func (l *pipeListener) Close() error   { return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478} }

// FuzzStream feeds an arbitrary byte stream through the stream framer, as a
// client would send it, with pion's side played by the test: the framer
// must never panic or hang. With a policy that passes everything, what pion
// reads is always a prefix of what the client sent.
func FuzzStream(f *testing.F) {
	seeds := fuzzSeeds(f)
	f.Add(slices.Concat(seeds...))
	bind := seeds[len(seeds)-2]
	f.Add(slices.Concat(bind, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x00}, channelData([]byte("x"), true)))
	f.Add(slices.Concat(bind, aliceAllocate(f), bind, bytes.Repeat([]byte{0xAB}, 30)))
	f.Add(slices.Concat(channelData(bytes.Repeat([]byte{1}, 0xFFFF), true), aliceAllocate(f, dontFragment())))
	f.Add([]byte{0x00, 0x01, 0xFF, 0xFF, 0x21, 0x12, 0xA4, 0x42})
	// Bad framing with much more behind it: the client is still writing
	// when the framer gives up.
	f.Add(append([]byte{0xFF, 0xFF}, bytes.Repeat([]byte{1}, 200000)...))
	for _, s := range seeds {
		f.Add(s)
	}

	bindSuccess, err := stun.Build(stun.TransactionID, stun.NewType(methodConnectionBind, stun.ClassSuccessResponse))
	if err != nil {
		f.Fatal(err)
	}
	tests := []struct {
		name     string
		policy   *gate.Policy
		bound    bool // pion accepts ConnectionBinds
		prefixed bool // output must be a prefix of the input
	}{
		{"pass-only, binds refused", &gate.Policy{}, false, true},
		{"pass-only, binds accepted", &gate.Policy{}, true, true},
		{"acting policy", actingPolicy(), false, false},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tc := range tests {
			g := gate.New(tc.policy, gate.Hooks{Accepting: func() bool { return false }})
			out, err := pumpStream(t, g, data, tc.bound, bindSuccess.Raw)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("%s: the framer hung (read %d of %d bytes)", tc.name, len(out), len(data))
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, edge.ErrBadFraming) && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("%s: read error %v", tc.name, err)
			}
			if want := passedFrames(data, tc.bound); tc.prefixed && !bytes.HasPrefix(want, out) {
				t.Fatalf("%s: pion read %x, not a prefix of %x", tc.name, out, want)
			}
		}
	})
}

// passedFrames is what a pass-only gate hands pion of a client's stream:
// every frame in order, less requests with a bad FINGERPRINT (RFC 8489
// §6.3: dropped silently); after a ConnectionBind that pion accepts
// (bound), the rest is raw data.
func passedFrames(data []byte, bound bool) []byte {
	bind := stun.NewType(methodConnectionBind, stun.ClassRequest).Value()
	var out []byte
	for len(data) >= 4 {
		var n int
		switch data[0] >> 6 {
		case 0: // STUN
			n = 20 + int(binary.BigEndian.Uint16(data[2:4]))
		case 1: // ChannelData, padded over streams
			n = (4 + int(binary.BigEndian.Uint16(data[2:4])) + 3) &^ 3
		default:
			return append(out, data...)
		}
		if n > len(data) {
			break
		}
		frame := data[:n]
		data = data[n:]
		t := binary.BigEndian.Uint16(frame)
		request := n >= 20 && frame[0]>>6 == 0 && t&0x0110 == 0
		if request && !fingerprintOK(frame) {
			continue
		}
		out = append(out, frame...)
		if bound && request && t == bind {
			break
		}
	}
	return append(out, data...)
}

// pumpStream sends data through a gate-wrapped net.Pipe and returns what
// pion would read and the error that ended reading. With bound, the pion
// side has answered a ConnectionBind with success before anything is read.
func pumpStream(t *testing.T, g *gate.Gate, data []byte, bound bool, bindSuccess []byte) ([]byte, error) {
	serverEnd, client := net.Pipe()
	server, err := edge.New(g, nil).Listener(&pipeListener{conn: serverEnd}, time.Second, nil).Accept()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	_ = server.SetDeadline(deadline)
	_ = client.SetDeadline(deadline)

	// The client drains the gate's answers (a pipe has no buffer), writes
	// everything, then closes.
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, client)
		close(drained)
	}()
	go func() {
		_, _ = client.Write(data)
		_ = client.Close()
	}()
	// Closing the server end first unblocks a client still writing after
	// the framer gave up.
	defer func() {
		_ = server.Close()
		<-drained
	}()

	if bound {
		if _, err := server.Write(bindSuccess); err != nil {
			return nil, err
		}
	}
	var out []byte
	buf := make([]byte, 1600)
	for {
		n, err := server.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}
