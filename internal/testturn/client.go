// Package testturn is a minimal TURN client for tests: it shows exact
// responses (error codes, signatures, attributes), which a full client hides.
// Tests of the server and end-to-end tests share it.
package testturn

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/auth"
)

// Client is a minimal TURN client that shows exact responses: enough for the
// cases coturn's uclient cannot assert (486, 300, 403, 401, lifetimes).
type Client struct {
	t      *testing.T
	conn   net.Conn
	stream bool
	user   string
	pass   string
	realm  string
	nonce  []byte
	key    []byte
}

// Dial connects to a turnd listener over "udp" or "tcp".
func Dial(t *testing.T, network, addr, user, pass string) *Client {
	t.Helper()
	return DialFrom(t, network, "", addr, user, pass)
}

// DialTLS connects to a turns: listener, trusting cfg's roots.
func DialTLS(t *testing.T, addr string, cfg *tls.Config, user, pass string) *Client {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Client{t: t, conn: conn, stream: true, user: user, pass: pass}
}

// DialFrom is Dial from the local address from: an IP address ("" for
// any), or an IP address and port. Tests use 127.0.0.2 and up to be a
// different client host on loopback, and a port to be a given client.
func DialFrom(t *testing.T, network, from, addr, user, pass string) *Client {
	t.Helper()
	return dialFrom(t, net.Dialer{}, network, from, addr, user, pass)
}

// DialShared is DialFrom with SO_REUSEPORT, so that clients can share one
// local address and port, as one browser socket talks to every TURN server
// it was given.
func DialShared(t *testing.T, network, from, addr, user, pass string) *Client {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return dialFrom(t, d, network, from, addr, user, pass)
}

func dialFrom(t *testing.T, d net.Dialer, network, from, addr, user, pass string) *Client {
	t.Helper()
	if from != "" {
		host, port := from, 0
		if h, p, err := net.SplitHostPort(from); err == nil {
			host = h
			if port, err = strconv.Atoi(p); err != nil {
				t.Fatalf("dial from %q: %v", from, err)
			}
		}
		ip := net.ParseIP(host)
		if network == "tcp" {
			d.LocalAddr = &net.TCPAddr{IP: ip, Port: port}
		} else {
			d.LocalAddr = &net.UDPAddr{IP: ip, Port: port}
		}
	}
	conn, err := d.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Client{t: t, conn: conn, stream: network == "tcp", user: user, pass: pass}
}

// Over is a client on conn, a connection the test set up itself (one that
// starts with a PROXY protocol header, or a socket made in a network
// namespace); a UDP socket, or a TCP or TLS stream. It is closed when the
// test ends.
func Over(t *testing.T, conn net.Conn, user, pass string) *Client {
	t.Cleanup(func() { conn.Close() })
	_, datagrams := conn.(net.PacketConn)
	return &Client{t: t, conn: conn, stream: !datagrams, user: user, pass: pass}
}

// LocalAddr is the client's own address, which the server should see.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Close closes the connection (over TCP this ends its allocation).
func (c *Client) Close() { c.conn.Close() }

// read returns the next STUN message from the server.
func (c *Client) read(deadline time.Time) (*stun.Message, error) {
	raw, err := c.readFrame(deadline)
	if err != nil {
		return nil, err
	}
	m := &stun.Message{Raw: raw}
	return m, m.Decode()
}

// readFrame returns the next datagram, or the next frame of a stream: a
// STUN message, or ChannelData without its padding (RFC 8656 §12.5).
func (c *Client) readFrame(deadline time.Time) ([]byte, error) {
	_ = c.conn.SetReadDeadline(deadline)
	if !c.stream {
		buf := make([]byte, 2048)
		n, err := c.conn.Read(buf)
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c.conn, hdr); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint16(hdr[2:4]))
	rest := 16 + size // STUN: the rest of the 20-byte header, then the body
	if hdr[0]&0xC0 == 0x40 {
		rest = (size + 3) &^ 3 // ChannelData, padded
	}
	body := make([]byte, rest)
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, err
	}
	if hdr[0]&0xC0 == 0x40 {
		body = body[:size]
	}
	return append(hdr, body...), nil
}

// Stream reports whether the client speaks over TCP or TLS.
func (c *Client) Stream() bool { return c.stream }

// ReadFrame returns the next datagram or stream frame as it arrives
// (ChannelData without its padding), waiting at most timeout.
func (c *Client) ReadFrame(timeout time.Duration) ([]byte, error) {
	return c.readFrame(time.Now().Add(timeout))
}

// RoundTrip sends a request and returns the response with its transaction
// ID, skipping indications; over UDP it retransmits (bounded).
func (c *Client) RoundTrip(req *stun.Message) *stun.Message {
	c.t.Helper()
	tries := 1
	if !c.stream {
		tries = 5
	}
	for i := 0; i < tries; i++ {
		if _, err := c.conn.Write(req.Raw); err != nil {
			c.t.Fatalf("write: %v", err)
		}
		deadline := time.Now().Add(time.Second)
		for {
			m, err := c.read(deadline)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			if err != nil {
				c.t.Fatalf("read response: %v", err)
			}
			if m.TransactionID == req.TransactionID {
				return m
			}
		}
	}
	c.t.Fatalf("no response to %v", req.Type)
	return nil
}

// Request sends an authenticated request, doing the long-term credential
// exchange (401 → realm and nonce → signed retry; 438 → new nonce).
func (c *Client) Request(method stun.Method, attrs ...stun.Setter) *stun.Message {
	c.t.Helper()
	for i := 0; i < 3; i++ {
		resp := c.RoundTrip(c.Build(method, attrs...))
		code := ErrorCode(resp)
		if code == 401 || code == 438 {
			var nonce stun.Nonce
			var realm stun.Realm
			if nonce.GetFrom(resp) != nil || realm.GetFrom(resp) != nil {
				c.t.Fatalf("%d without nonce/realm", code)
			}
			if c.nonce != nil && code == 401 {
				return resp // signed and still refused: bad credentials
			}
			c.nonce, c.realm = nonce, realm.String()
			c.key = auth.LongTermKey(c.user, c.realm, c.pass)
			continue
		}
		return resp
	}
	c.t.Fatal("authentication did not converge")
	return nil
}

// ErrorCode returns a response's ERROR-CODE, or 0 for a success response.
func ErrorCode(m *stun.Message) int {
	var ec stun.ErrorCodeAttribute
	if ec.GetFrom(m) != nil {
		return 0
	}
	return int(ec.Code)
}

// Signed reports whether a response carries a MESSAGE-INTEGRITY made with the client's key.
func (c *Client) Signed(m *stun.Message) bool {
	return c.key != nil && stun.MessageIntegrity(c.key).Check(m) == nil
}

// RawAttr builds an attribute from its type and value.
func RawAttr(t stun.AttrType, v []byte) stun.Setter {
	return stun.RawAttribute{Type: t, Length: uint16(len(v)), Value: v}
}

// UDPTransport is REQUESTED-TRANSPORT UDP (17).
var UDPTransport = RawAttr(stun.AttrRequestedTransport, []byte{17, 0, 0, 0})

// Lifetime is a LIFETIME attribute.
func Lifetime(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second))
	return RawAttr(stun.AttrLifetime, v)
}

// PeerAddr is an XOR-PEER-ADDRESS attribute.
func PeerAddr(a *net.UDPAddr) stun.Setter {
	return setterFunc(func(m *stun.Message) error {
		return (&stun.XORMappedAddress{IP: a.IP, Port: a.Port}).AddToAs(m, stun.AttrXORPeerAddress)
	})
}

type setterFunc func(*stun.Message) error

func (f setterFunc) AddTo(m *stun.Message) error { return f(m) }

// Allocate asks for a UDP relay and returns the response.
func (c *Client) Allocate(extra ...stun.Setter) *stun.Message {
	return c.Request(stun.MethodAllocate, append([]stun.Setter{UDPTransport}, extra...)...)
}

// Relayed returns the XOR-RELAYED-ADDRESS of an Allocate success.
func Relayed(t *testing.T, m *stun.Message) *net.UDPAddr {
	t.Helper()
	var a stun.XORMappedAddress
	if err := a.GetFromAs(m, stun.AttrXORRelayedAddress); err != nil {
		t.Fatalf("no relayed address (code %d): %v", ErrorCode(m), err)
	}
	return &net.UDPAddr{IP: a.IP, Port: a.Port}
}

// MustAllocate allocates and fails the test on an error response.
func (c *Client) MustAllocate() *net.UDPAddr {
	c.t.Helper()
	resp := c.Allocate()
	if code := ErrorCode(resp); code != 0 {
		c.t.Fatalf("allocate: error %d", code)
	}
	return Relayed(c.t, resp)
}

// Permit creates a permission for peer and returns the error code (0 = ok).
func (c *Client) Permit(peer *net.UDPAddr) int {
	return ErrorCode(c.Request(stun.MethodCreatePermission, PeerAddr(peer)))
}

// Refresh refreshes the allocation and returns the error code.
func (c *Client) Refresh(d time.Duration) int {
	return ErrorCode(c.Request(stun.MethodRefresh, Lifetime(d)))
}

// Send relays data to peer with a Send indication.
func (c *Client) Send(peer *net.UDPAddr, data []byte) {
	c.t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		PeerAddr(peer), RawAttr(stun.AttrData, data), stun.Fingerprint)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(m.Raw); err != nil {
		c.t.Fatal(err)
	}
}

// Echo sends data to a UDP echo peer and waits for it to come back in a Data
// indication (bounded: 10 sends, 300 ms each).
func (c *Client) Echo(peer *net.UDPAddr, data string) bool {
	c.t.Helper()
	for i := 0; i < 10; i++ {
		c.Send(peer, []byte(data))
		deadline := time.Now().Add(300 * time.Millisecond)
		for {
			m, err := c.read(deadline)
			if err != nil {
				break
			}
			if m.Type == stun.NewType(stun.MethodData, stun.ClassIndication) {
				if v, err := m.Get(stun.AttrData); err == nil && string(v) == data {
					return true
				}
			}
		}
	}
	return false
}

// EchoChannel sends data to a UDP echo peer as ChannelData on channel
// number and waits for it to come back on that channel (bounded: 10 sends,
// 300 ms each).
func (c *Client) EchoChannel(number uint16, data string) bool {
	c.t.Helper()
	msg := c.channelData(number, []byte(data))
	for i := 0; i < 10; i++ {
		if _, err := c.conn.Write(msg); err != nil {
			c.t.Fatal(err)
		}
		deadline := time.Now().Add(300 * time.Millisecond)
		for {
			f, err := c.readFrame(deadline)
			if err != nil {
				break
			}
			if len(f) >= 4 && binary.BigEndian.Uint16(f) == number && string(f[4:]) == data {
				return true
			}
		}
	}
	return false
}

// LifetimeOf returns the LIFETIME of a response.
func LifetimeOf(t *testing.T, m *stun.Message) time.Duration {
	t.Helper()
	v, err := m.Get(stun.AttrLifetime)
	if err != nil || len(v) != 4 {
		t.Fatalf("no lifetime in response (code %d)", ErrorCode(m))
	}
	return time.Duration(binary.BigEndian.Uint32(v)) * time.Second
}

// BindingMapped sends a STUN Binding request and returns XOR-MAPPED-ADDRESS.
func (c *Client) BindingMapped() *net.UDPAddr {
	c.t.Helper()
	req, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		c.t.Fatal(err)
	}
	var a stun.XORMappedAddress
	if a.GetFrom(c.RoundTrip(req)) != nil {
		return nil
	}
	return &net.UDPAddr{IP: a.IP, Port: a.Port}
}

// ChannelBind binds channel number to peer and returns the response.
func (c *Client) ChannelBind(number uint16, peer *net.UDPAddr) *stun.Message {
	v := make([]byte, 4)
	binary.BigEndian.PutUint16(v, number)
	return c.Request(stun.MethodChannelBind, RawAttr(stun.AttrChannelNumber, v), PeerAddr(peer))
}

// SendChannel sends data as ChannelData on channel number, without waiting.
func (c *Client) SendChannel(number uint16, data []byte) {
	c.t.Helper()
	msg := c.channelData(number, data)
	if _, err := c.conn.Write(msg); err != nil {
		c.t.Fatal(err)
	}
}

// channelData frames data as ChannelData on channel number, padded to four
// bytes over TCP and TLS (RFC 8656 §12.5).
func (c *Client) channelData(number uint16, data []byte) []byte {
	size := 4 + len(data)
	if c.stream {
		size = (size + 3) &^ 3
	}
	msg := make([]byte, size)
	binary.BigEndian.PutUint16(msg, number)
	binary.BigEndian.PutUint16(msg[2:], uint16(len(data)))
	copy(msg[4:], data)
	return msg
}
