package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/server"
)

// FuzzServerPacket feeds arbitrary datagrams and TCP streams to a real
// server — gate, fast path and pion behind it — and checks after each that
// it still answers a STUN Binding: no input may crash it or wedge its read
// loops.
func FuzzServerPacket(f *testing.F) {
	seed, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	alloc, _ := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{17, 0, 0, 0}})
	f.Add(seed.Raw)
	f.Add(alloc.Raw)
	f.Add([]byte{0x40, 0x00, 0x00, 0x04, 1, 2, 3, 4})
	f.Add([]byte{0x00, 0x16, 0xff, 0xff, 0x21, 0x12, 0xa4, 0x42})
	f.Add([]byte{0xff})

	opts := testOptions()
	opts.Config.Limits.UnauthenticatedRate = 0 // the fuzzer is one very busy client
	s, err := server.New(opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	udp, err := net.Dial("udp", s.UDPAddrs()[0].String())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { udp.Close() })
	tcpAddr := s.TCPAddrs()[0].String()

	f.Fuzz(func(t *testing.T, pkt []byte) {
		if _, err := udp.Write(pkt); err != nil {
			t.Fatal(err)
		}
		if c, err := net.Dial("tcp", tcpAddr); err == nil {
			_, _ = c.Write(pkt)
			c.Close()
		}
		if !answersBinding(udp) {
			t.Fatalf("server stopped answering after % x", pkt)
		}
	})
}

// answersBinding sends a Binding request and waits (bounded) for its answer,
// skipping whatever else the server sent back.
func answersBinding(c net.Conn) bool {
	req, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	buf := make([]byte, 2048)
	for try := 0; try < 3; try++ {
		_, _ = c.Write(req.Raw)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			_ = c.SetReadDeadline(deadline)
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			m := &stun.Message{Raw: buf[:n]}
			if m.Decode() == nil && m.TransactionID == req.TransactionID {
				return true
			}
		}
	}
	return false
}
