package handover

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	in := message{Type: typeOffer, Version: 3, State: bytes.Repeat([]byte{0, 1, 2}, 100000), Names: []string{"udp:0"}, Files: 1}
	buf, err := encodeFrame(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := readFrame(bytes.NewReader(buf))
	if err != nil || out.Version != 3 || !bytes.Equal(out.State, in.State) || out.Files != 1 {
		t.Fatalf("round trip: %+v, %v", out.Type, err)
	}
}

func TestFrameErrors(t *testing.T) {
	frame := func(body string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		return append(b, body...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"over the cap", binary.BigEndian.AppendUint32(nil, maxFrame+1), "over the 67108864-byte cap"},
		{"no type", frame(`{}`), `unknown message type ""`},
		{"unknown type", frame(`{"type":"x"}`), `unknown message type "x"`},
		{"not json", frame(`{"type":`), "decode frame"},
		{"cut body", frame(`{"type":"serving"}`)[:10], "unexpected EOF"},
		{"cut header", []byte{0, 0}, "unexpected EOF"},
	} {
		_, err := readFrame(bytes.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if _, err := readFrame(bytes.NewReader(nil)); !errors.Is(err, ErrClosed) {
		t.Errorf("empty stream: %v; want ErrClosed", err)
	}
}

// A header that announces the cap and sends little costs little.
func TestFrameLyingLength(t *testing.T) {
	in := binary.BigEndian.AppendUint32(nil, maxFrame)
	in = append(in, `{"type":"serving"}`...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := readFrame(bytes.NewReader(in)); err == nil {
		t.Fatal("a cut frame was read")
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("a 22-byte frame that claims %d bytes allocated %d", maxFrame, grew)
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, m := range []message{{Type: typeHello, Versions: []int{1, 2}, PID: 9}, {Type: typeFiles, Files: 200}, {Type: typeError, Reason: "no"}} {
		b, _ := encodeFrame(m)
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("\x00\x00\x00\x10{\"type\":\"bogus\"}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := readFrame(bytes.NewReader(in))
		if err == nil && !knownType(m.Type) {
			t.Fatalf("accepted type %q", m.Type)
		}
	})
}
