package edge

import (
	"net"
	"testing"

	"github.com/pion/stun/v4"
	"github.com/turnd/turnd/internal/gate"
)

// fixedConn is a connection whose RemoteAddr is one stored object, as
// net.TCPConn's is; writes are discarded.
type fixedConn struct {
	net.Conn
	remote, local *net.TCPAddr
}

func (c *fixedConn) RemoteAddr() net.Addr        { return c.remote }
func (c *fixedConn) LocalAddr() net.Addr         { return c.local }
func (c *fixedConn) Write(b []byte) (int, error) { return len(b), nil }

// TestStreamPerPacketPathsDoNotAllocate: what pion writes to a stream
// client (ChannelData, Data indications) and a Send indication the fast
// path leaves to the gate cost no allocation.
func TestStreamPerPacketPathsDoNotAllocate(t *testing.T) {
	c := &streamConn{
		Conn: &fixedConn{
			remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000},
			local:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478},
		},
		e: New(gate.New(&gate.Policy{}, gate.Hooks{Accepting: func() bool { return true }}), nil),
	}
	build := func(typ stun.MessageType) []byte {
		m, err := stun.Build(stun.TransactionID, typ, stun.RawAttribute{Type: stun.AttrData, Value: make([]byte, 160)})
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	channelData := append([]byte{0x40, 0x01, 0x00, 0xa0}, make([]byte, 160)...)
	data := build(stun.NewType(stun.MethodData, stun.ClassIndication))
	send := build(stun.NewType(stun.MethodSend, stun.ClassIndication))
	for name, f := range map[string]func(){
		"write ChannelData":     func() { _, _ = c.Write(channelData) },
		"write Data indication": func() { _, _ = c.Write(data) },
		"inspect Send":          func() { _, _ = c.inspect(send) },
	} {
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s: %.1f allocations per packet, want 0", name, a)
		}
	}
}
