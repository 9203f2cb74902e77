package edge_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// streamPair accepts one loopback TCP connection through edge.Listener and
// returns the server side (what pion reads) and the client side.
func streamPair(t *testing.T, g *gate.Gate) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen tcp: %v", err)
	}
	return acceptPair(t, edge.New(g, nil).Listener(ln, time.Second, nil), func() (net.Conn, error) {
		return net.Dial("tcp4", ln.Addr().String())
	})
}

// acceptPair dials ln and returns both ends, both closed at cleanup and
// both bounded by ioTimeout.
func acceptPair(t *testing.T, ln net.Listener, dial func() (net.Conn, error)) (server, client net.Conn) {
	t.Helper()
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := dial()
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	for _, c := range []net.Conn{server, client} {
		t.Cleanup(func() { _ = c.Close() })
		if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
			t.Fatal(err)
		}
	}
	return server, client
}

// readN reads exactly n bytes from c in Reads of at most size bytes.
func readN(t *testing.T, c net.Conn, n, size int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, size)
	for len(out) < n {
		k, err := c.Read(buf[:min(size, n-len(out))])
		out = append(out, buf[:k]...)
		if err != nil {
			t.Fatalf("read after %d of %d bytes: %v", len(out), n, err)
		}
	}
	if len(out) != n {
		t.Fatalf("read %d bytes, want %d", len(out), n)
	}
	return out
}

// writeChunks writes b in pieces of chunk bytes from another goroutine (a
// large write must not wait for the reader under test).
func writeChunks(t *testing.T, c net.Conn, b []byte, chunk int) {
	t.Helper()
	done := make(chan error, 1)
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("write: %v", err)
		}
	})
	go func() {
		for len(b) > 0 {
			k := min(chunk, len(b))
			if _, err := c.Write(b[:k]); err != nil {
				done <- err
				return
			}
			b = b[k:]
		}
		done <- nil
	}()
}

// passingFrames is a stream the gate leaves alone, ending in frames of the
// largest sizes a stream can carry.
func passingFrames(t testing.TB) [][]byte {
	big, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9),
		stun.RawAttribute{Type: stun.AttrData, Value: bytes.Repeat([]byte{0xA5}, 65000)})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{
		request(t, stun.MethodBinding, testUser, aliceKey(), true),
		channelData([]byte("12345"), true),
		sendIndication(t, bytes.Repeat([]byte{1}, 3000)),
		channelData(nil, true),
		request(t, stun.MethodAllocate, testUser, nil, false, transport(6), dontFragment()),
		channelData(bytes.Repeat([]byte{0xFF}, 1300), true),
		request(t, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(time.Minute)),
		channelData(bytes.Repeat([]byte{0x7E}, 0xFFFF), true), // 65536 bytes padded
		big.Raw,
		channelData([]byte{0}, true),
	}
}

// TestStreamFraming checks that frames come out intact and in order however
// the client's writes and pion's reads cut the byte stream.
func TestStreamFraming(t *testing.T) {
	frames := passingFrames(t)
	in := slices.Concat(frames...)
	tests := []struct {
		name       string
		writeChunk int
		readSize   int
	}{
		{"one write", len(in), 1600},
		{"one write, tiny reads", len(in), 7},
		{"byte by byte", 1, 1600},
		{"7-byte writes", 7, 1600},
		{"1500-byte writes, 100-byte reads", 1500, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := strictPolicy()
			p.MaxLifetime = time.Hour
			server, client := streamPair(t, gate.New(p, gate.Hooks{Accepting: func() bool { return true }}))
			if tc.writeChunk == 1 {
				// Byte by byte for all but the two 64 KiB frames, which
				// follow in larger pieces to keep the test fast.
				head := len(slices.Concat(frames[:len(frames)-3]...))
				writeChunks(t, client, in[:head], 1)
				out := readN(t, server, head, tc.readSize)
				if !bytes.Equal(out, in[:head]) {
					t.Fatalf("head differs at byte %d", firstDiff(out, in))
				}
				writeChunks(t, client, in[head:], 4096)
				if out := readN(t, server, len(in)-head, tc.readSize); !bytes.Equal(out, in[head:]) {
					t.Fatalf("tail differs at byte %d", head+firstDiff(out, in[head:]))
				}
				return
			}
			writeChunks(t, client, in, tc.writeChunk)
			if out := readN(t, server, len(in), tc.readSize); !bytes.Equal(out, in) {
				t.Fatalf("stream differs at byte %d of %d", firstDiff(out, in), len(in))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestStreamAnswersAndRewrites checks that the gate's decisions apply on
// streams: answered requests vanish from what pion reads and the answer
// reaches the client's socket; rewritten requests are replaced in place.
// The ChannelData in front of each request checks that its padding (length
// 5 → 8 bytes on the wire) is respected: a framer off by the padding would
// not find the request.
func TestStreamAnswersAndRewrites(t *testing.T) {
	cd5, cd1 := channelData([]byte("12345"), true), channelData([]byte{9}, true)
	if len(cd5) != 12 || len(cd1) != 8 {
		t.Fatalf("padded ChannelData of %d and %d bytes, want 12 and 8", len(cd5), len(cd1))
	}
	binding := request(t, stun.MethodBinding, testUser, nil, true)
	tests := []struct {
		name      string
		accepting bool
		request   []byte
		wantCode  stun.ErrorCode // 0: no answer, the request is rewritten
	}{
		{"draining Allocate answered 300", false, aliceAllocate(t), stun.CodeTryAlternate},
		{"TCP Allocate answered 442", true, request(t, stun.MethodAllocate, testUser, aliceKey(), true, transport(6)), stun.CodeUnsupportedTransProto},
		{"DONT-FRAGMENT rewritten", true, aliceAllocate(t, dontFragment()), 0},
		{"long Refresh rewritten", true, request(t, stun.MethodRefresh, testUser, aliceKey(), false, lifetime(24*time.Hour)), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, client := streamPair(t, gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return tc.accepting }}))
			writeChunks(t, client, slices.Concat(binding, cd5, tc.request, cd1), 1<<20)

			if tc.wantCode != 0 {
				want := slices.Concat(binding, cd5, cd1)
				if out := readN(t, server, len(want), 1600); !bytes.Equal(out, want) {
					t.Errorf("pion read %x, want %x", out, want)
				}
				hdr := readN(t, client, 20, 20)
				reply := decode(t, append(hdr, readN(t, client, int(hdr[2])<<8|int(hdr[3]), 1600)...))
				checkSigned(t, reply, aliceKey())
				if code := errorCode(t, reply); code != tc.wantCode {
					t.Errorf("client got %d, want %d", code, tc.wantCode)
				}
				if reply.TransactionID != decode(t, tc.request).TransactionID {
					t.Error("answer has another transaction ID")
				}
				return
			}
			head := readN(t, server, len(binding)+len(cd5)+20, 1600)
			if !bytes.Equal(head[:len(binding)+len(cd5)], slices.Concat(binding, cd5)) {
				t.Fatalf("frames before the request changed: %x", head)
			}
			hdr := head[len(binding)+len(cd5):]
			rewritten := decode(t, append(hdr, readN(t, server, int(hdr[2])<<8|int(hdr[3]), 1600)...))
			if err := stun.MessageIntegrity(aliceKey()).Check(rewritten); err != nil {
				t.Errorf("MESSAGE-INTEGRITY does not verify: %v", err)
			}
			if rewritten.Contains(stun.AttrFingerprint) != decode(t, tc.request).Contains(stun.AttrFingerprint) {
				t.Error("FINGERPRINT added or lost")
			}
			if rewritten.Contains(stun.AttrDontFragment) {
				t.Error("DONT-FRAGMENT still there")
			}
			if life, err := rewritten.Get(stun.AttrLifetime); err == nil && int(life[2])<<8|int(life[3]) > 60 {
				t.Errorf("LIFETIME %x not capped", life)
			}
			if out := readN(t, server, len(cd1), 1600); !bytes.Equal(out, cd1) {
				t.Errorf("frame after the request = %x, want %x", out, cd1)
			}
		})
	}
}

// TestStreamChannelDataPadding frames every ChannelData length modulo 4.
func TestStreamChannelDataPadding(t *testing.T) {
	g := gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return false }})
	for n := range 9 {
		cd := channelData(bytes.Repeat([]byte{0xEE}, n), true)
		if want := 4 + (n+3)/4*4; len(cd) != want {
			t.Fatalf("channelData(%d) is %d bytes, want %d", n, len(cd), want)
		}
		server, client := streamPair(t, g)
		writeChunks(t, client, slices.Concat(cd, aliceAllocate(t), cd), 1<<20)
		if out := readN(t, server, 2*len(cd), 1600); !bytes.Equal(out, slices.Concat(cd, cd)) {
			t.Errorf("length %d: pion read %x, want the two ChannelData only", n, out)
		}
	}
}

// TestStreamBadFraming: a stream that is not STUN or ChannelData cannot be
// resynchronised; Read delivers the frames before the bad bytes, then says
// so, every time.
func TestStreamBadFraming(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		good []byte // the frames in front of the bad bytes, delivered first
	}{
		{"0xFF", bytes.Repeat([]byte{0xFF}, 64), nil},
		{"0x80", append([]byte{0x80}, make([]byte, 40)...), nil},
		{"0xC0 after padded ChannelData", append(channelData([]byte("x"), true), 0xC0, 0, 0, 0), channelData([]byte("x"), true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, client := streamPair(t, gate.New(strictPolicy(), gate.Hooks{}))
			writeChunks(t, client, tc.in, len(tc.in))
			buf := make([]byte, 1600)
			var err error
			var got []byte
			for err == nil {
				var n int
				n, err = server.Read(buf)
				got = append(got, buf[:n]...)
			}
			if !errors.Is(err, edge.ErrBadFraming) {
				t.Fatalf("Read error %v, want ErrBadFraming (read %x first)", err, got)
			}
			if !bytes.Equal(got, tc.good) {
				t.Errorf("read %x before the error, want %x", got, tc.good)
			}
			if _, err := server.Read(buf); !errors.Is(err, edge.ErrBadFraming) {
				t.Errorf("second Read error %v, want ErrBadFraming again", err)
			}
		})
	}
}

// TestStreamEOF: a clean close delivers every complete frame, then io.EOF;
// a trailing partial frame is dropped.
func TestStreamEOF(t *testing.T) {
	server, client := streamPair(t, gate.New(strictPolicy(), gate.Hooks{}))
	cd := channelData([]byte("last words"), true)
	if _, err := client.Write(append(append([]byte(nil), cd...), cd[:5]...)); err != nil {
		t.Fatal(err)
	}
	_ = client.Close()
	if out := readN(t, server, len(cd), 1600); !bytes.Equal(out, cd) {
		t.Fatalf("read %x, want %x", out, cd)
	}
	if n, err := server.Read(make([]byte, 1600)); n != 0 || err != io.EOF {
		t.Fatalf("Read = (%d, %v), want (0, EOF)", n, err)
	}
}

// bindAnswer is pion's answer to a ConnectionBind (success or error).
func bindAnswer(t *testing.T, bind []byte, class stun.MessageClass) []byte {
	t.Helper()
	setters := []stun.Setter{decode(t, bind), stun.NewType(methodConnectionBind, class)}
	if class == stun.ClassErrorResponse {
		setters = append(setters, stun.CodeBadRequest)
	}
	m, err := stun.Build(append(setters, stun.MessageIntegrity(aliceKey()), stun.Fingerprint)...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// TestStreamConnectionBind checks RFC 6062 data connections: pion gets the
// ConnectionBind alone; after pion's success answer the bytes behind it are
// raw peer data, passed through unframed; after a refusal the connection
// is still a control connection and the gate keeps inspecting it.
func TestStreamConnectionBind(t *testing.T) {
	bind := request(t, methodConnectionBind, testUser, aliceKey(), true,
		stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 7}})
	peerData := []byte{0xFF, 0xFF, 0x00, 0x03, 0x80, 'r', 'a', 'w', 0x00, 0x01, 0x00, 0x50}

	t.Run("accepted", func(t *testing.T) {
		for _, readSize := range []int{1600, 3} {
			server, client := streamPair(t, gate.New(strictPolicy(), gate.Hooks{}))
			writeChunks(t, client, slices.Concat(bind, peerData), 1<<20)
			buf := make([]byte, 1600)
			n, err := io.ReadAtLeast(server, buf, len(bind))
			if err != nil || !bytes.Equal(buf[:n], bind) {
				t.Fatalf("first read = %x (%v), want the ConnectionBind alone", buf[:n], err)
			}
			// What pion does next: answer success, then copy the connection raw.
			if _, err := server.Write(bindAnswer(t, bind, stun.ClassSuccessResponse)); err != nil {
				t.Fatal(err)
			}
			if out := readN(t, server, len(peerData), readSize); !bytes.Equal(out, peerData) {
				t.Errorf("raw read %x, want %x", out, peerData)
			}
			if _, err := client.Write(peerData); err != nil {
				t.Fatal(err)
			}
			if out := readN(t, server, len(peerData), readSize); !bytes.Equal(out, peerData) {
				t.Errorf("later raw read %x, want %x", out, peerData)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		server, client := streamPair(t, gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return true }}))
		tcp := request(t, stun.MethodAllocate, testUser, aliceKey(), true, transport(6))
		cd := channelData([]byte("data"), true)
		writeChunks(t, client, slices.Concat(bind, tcp, cd), 1<<20)
		buf := make([]byte, 1600)
		n, err := io.ReadAtLeast(server, buf, len(bind))
		if err != nil || !bytes.Equal(buf[:n], bind) {
			t.Fatalf("first read = %x (%v), want the ConnectionBind alone", buf[:n], err)
		}
		if _, err := server.Write(bindAnswer(t, bind, stun.ClassErrorResponse)); err != nil {
			t.Fatal(err)
		}
		if out := readN(t, server, len(cd), 1600); !bytes.Equal(out, cd) {
			t.Errorf("pion read %x, want only the ChannelData behind the refused TCP Allocate", out)
		}
		readN(t, client, len(bindAnswer(t, bind, stun.ClassErrorResponse)), 1600)
		hdr := readN(t, client, 20, 20)
		reply := decode(t, append(hdr, readN(t, client, int(hdr[2])<<8|int(hdr[3]), 1600)...))
		if code := errorCode(t, reply); code != stun.CodeUnsupportedTransProto {
			t.Errorf("client got %d, want 442", code)
		}
	})
}
