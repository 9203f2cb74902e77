package gate

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

func TestNoteGranted(t *testing.T) {
	client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 5000}
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	var got []time.Duration
	g := New(&Policy{}, Hooks{Granted: func(c, s net.Addr, d time.Duration) {
		if c.String() != client.String() || s.String() != server.String() {
			t.Errorf("granted to %v on %v", c, s)
		}
		got = append(got, d)
	}})
	msg := func(typ stun.MessageType, attrs ...stun.Setter) []byte {
		m, err := stun.Build(append([]stun.Setter{stun.TransactionID, typ}, attrs...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	lifetime := func(s uint32) stun.Setter {
		return setter(func(m *stun.Message) error {
			m.Add(stun.AttrLifetime, []byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)})
			return nil
		})
	}
	software := stun.NewSoftware("x")
	for _, pkt := range [][]byte{
		msg(stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse), software, lifetime(600)),
		msg(stun.NewType(stun.MethodRefresh, stun.ClassSuccessResponse), lifetime(0)),
		msg(stun.NewType(stun.MethodRefresh, stun.ClassErrorResponse), lifetime(300)), // not a grant
		msg(stun.NewType(stun.MethodBinding, stun.ClassSuccessResponse), lifetime(300)),
		msg(stun.NewType(stun.MethodRefresh, stun.ClassSuccessResponse)), // no LIFETIME
		{0x40, 0x00, 0x00, 0x04, 1, 2, 3, 4},                             // ChannelData
	} {
		g.noteGranted(pkt, func() net.Addr { return client }, func() net.Addr { return server })
	}
	if len(got) != 2 || got[0] != 10*time.Minute || got[1] != 0 {
		t.Errorf("granted %v, want [10m0s 0s]", got)
	}
	data := msg(stun.NewType(stun.MethodData, stun.ClassIndication), software)
	allocs := testing.AllocsPerRun(1000, func() {
		g.noteGranted(data, func() net.Addr { return client }, func() net.Addr { return server })
	})
	if allocs != 0 {
		t.Errorf("noteGranted on a Data indication: %v allocations, want 0", allocs)
	}
}

type setter func(*stun.Message) error

func (f setter) AddTo(m *stun.Message) error { return f(m) }
