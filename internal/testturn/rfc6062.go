package testturn

import (
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/pion/stun/v4"
)

// TCPTransport is REQUESTED-TRANSPORT TCP (6): an RFC 6062 allocation.
var TCPTransport = RawAttr(stun.AttrRequestedTransport, []byte{6, 0, 0, 0})

// AllocateTCP asks for an RFC 6062 TCP relay and returns the response.
func (c *Client) AllocateTCP(extra ...stun.Setter) *stun.Message {
	return c.Request(stun.MethodAllocate, append([]stun.Setter{TCPTransport}, extra...)...)
}

// Connect asks the relay to open a TCP connection to peer (RFC 6062 §4.3).
func (c *Client) Connect(peer net.Addr) *stun.Message {
	return c.Request(stun.MethodConnect, PeerAddr(udpOf(peer)))
}

// StartConnect sends a Connect signed with the nonce of an earlier
// exchange and does not wait for its answer.
func (c *Client) StartConnect(peer net.Addr) {
	c.t.Helper()
	if c.nonce == nil {
		c.t.Fatal("StartConnect before any authenticated request")
	}
	req, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodConnect, stun.ClassRequest), PeerAddr(udpOf(peer)),
		stun.NewUsername(c.user), stun.NewRealm(c.realm), stun.NewNonce(string(c.nonce)), stun.MessageIntegrity(c.key),
		stun.Fingerprint)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(req.Raw); err != nil {
		c.t.Fatalf("write connect: %v", err)
	}
}

// WaitClosed reads and discards until the server closes the connection
// and reports whether it did within d.
func (c *Client) WaitClosed(d time.Duration) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.conn.Read(buf)
		var ne *net.OpError
		switch {
		case err == nil:
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			return false
		case errors.Is(err, io.EOF), errors.As(err, &ne):
			return true
		default:
			return false
		}
	}
}

func udpOf(a net.Addr) *net.UDPAddr {
	switch v := a.(type) {
	case *net.UDPAddr:
		return v
	case *net.TCPAddr:
		return &net.UDPAddr{IP: v.IP, Port: v.Port}
	}
	return nil
}

// Indication waits up to d for the next indication of method from the
// server (a ConnectionAttempt, say), skipping anything else.
func (c *Client) Indication(method stun.Method, d time.Duration) *stun.Message {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m, err := c.read(deadline)
		if err != nil {
			c.t.Fatalf("waiting for a %v indication: %v", method, err)
		}
		if m.Type == stun.NewType(method, stun.ClassIndication) {
			return m
		}
	}
}

// Conn is the client's connection, for the raw bytes of an RFC 6062 data
// connection once it is bound.
func (c *Client) Conn() net.Conn { return c.conn }
