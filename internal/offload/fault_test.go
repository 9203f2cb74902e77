package offload

import (
	"bytes"
	"testing"
)

// The test hooks of bpf/relay.c.
const (
	faultRewrite = 1
	faultReuse   = 2
)

// TestRunRewriteFails: a helper failing once the datagram is counted drops
// it (dropped_error) and takes the count back, both ways.
func TestRunRewriteFails(t *testing.T) {
	e := newRunEnvFault(t, faultRewrite)
	en := e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4001})
	for _, in := range []datagram{
		{src: client4, dst: server4, payload: channelData(0x4001, payload(100), 0, 0)},
		{src: peer4, dst: relay4, payload: payload(100)},
	} {
		before := e.passed(t)["dropped_error"]
		if ret, _ := e.run(t, in.bytes()); ret != 2 { // TC_ACT_SHOT
			t.Errorf("%v -> %v returned %d, want TC_ACT_SHOT", in.src, in.dst, ret)
		}
		if after := e.passed(t)["dropped_error"]; after != before+1 {
			t.Errorf("dropped_error went %d -> %d", before, after)
		}
	}
	if c, err := e.path.Count(en.Slot); err != nil || c != (Count{}) {
		t.Errorf("count %+v (%v), want nothing counted for dropped datagrams", c, err)
	}
}

// TestRunEntryReused: the entry's map element is reused for another client
// and channel while a datagram is being relayed (the hook replaces it twice
// after the route lookup, as concurrent Puts would); the datagram still goes
// out wholly as the entry said when it was looked up.
func TestRunEntryReused(t *testing.T) {
	e := newRunEnvFault(t, faultReuse)
	e.put(t, Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4002})
	data := payload(64)
	ret, out := e.run(t, datagram{src: peer4, dst: relay4, payload: data}.bytes())
	if ret != actRedirect {
		t.Fatalf("returned %d, want redirect", ret)
	}
	f, err := parseFrame(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := channelData(0x4002, data, 0, 0); f.dst != client4 || f.src != server4 || !bytes.Equal(f.payload, want) {
		t.Errorf("relayed %v -> %v, ChannelData %x, want %v -> %v, %x", f.src, f.dst, f.payload[:4], server4, client4, want[:4])
	}
}
