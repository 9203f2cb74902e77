package deploytest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"
)

// dialFunc opens a connection; tests pass net.Dial or a dialer that opens
// its sockets inside a network namespace (netns_test.go).
type dialFunc func(network, addr string) (net.Conn, error)

// turnClient is a raw TURN client that shows exact response codes (486 is
// what these tests are about, and coturn's uclient only says "failed").
// Its methods return errors instead of failing the test, so sessions can run
// in goroutines.
type turnClient struct {
	conn         net.Conn
	stream       bool
	user, pass   string
	realm, nonce string
	key          []byte
}

// rtt bounds one request/response exchange; over UDP it is split among
// retransmissions.
const rtt = 2 * time.Second

// dialTURN connects to a TURN server over "udp" or "tcp".
func dialTURN(dial dialFunc, network, addr, user, pass string) (*turnClient, error) {
	conn, err := dial(network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial turn %s %s: %w", network, addr, err)
	}
	return &turnClient{conn: conn, stream: network == "tcp", user: user, pass: pass}, nil
}

func (c *turnClient) Close() error { return c.conn.Close() }

// read returns the next STUN message (over TCP: the next framed one).
func (c *turnClient) read(deadline time.Time) (*stunMsg, error) {
	_ = c.conn.SetReadDeadline(deadline)
	if c.stream {
		hdr := make([]byte, headerLen)
		if _, err := io.ReadFull(c.conn, hdr); err != nil {
			return nil, err
		}
		if hdr[0]&0xC0 != 0 {
			return nil, fmt.Errorf("read turn: ChannelData on a client that binds no channels")
		}
		body := make([]byte, binary.BigEndian.Uint16(hdr[2:]))
		if _, err := io.ReadFull(c.conn, body); err != nil {
			return nil, err
		}
		return decodeSTUN(append(hdr, body...))
	}
	buf := make([]byte, 1500)
	n, err := c.conn.Read(buf)
	if err != nil {
		return nil, err
	}
	return decodeSTUN(buf[:n])
}

// roundTrip sends a request and waits for the response with its
// transaction ID, skipping anything else (Data indications); over UDP it
// retransmits up to four times.
func (c *turnClient) roundTrip(raw []byte, tid [12]byte) (*stunMsg, error) {
	tries := 1
	if !c.stream {
		tries = 4
	}
	for i := 0; i < tries; i++ {
		if _, err := c.conn.Write(raw); err != nil {
			return nil, fmt.Errorf("send request: %w", err)
		}
		deadline := time.Now().Add(rtt / time.Duration(tries))
		for {
			m, err := c.read(deadline)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("read response: %w", err)
			}
			if m.tid == tid {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("no response within %v", rtt)
}

// request sends an authenticated request, doing the long-term credential
// exchange: 401 gives realm and nonce, 438 a fresh nonce.
func (c *turnClient) request(method uint16, attrs ...stunAttr) (*stunMsg, error) {
	for i := 0; i < 3; i++ {
		all := append([]stunAttr(nil), attrs...)
		if c.key != nil {
			all = append(all, stunAttr{attrUsername, []byte(c.user)}, stunAttr{attrRealm, []byte(c.realm)},
				stunAttr{attrNonce, []byte(c.nonce)})
		}
		tid := newTID()
		resp, err := c.roundTrip(encodeSTUN(method|classRequest, tid, c.key, all...), tid)
		if err != nil {
			return nil, fmt.Errorf("method %#x: %w", method, err)
		}
		code := resp.errorCode()
		if code != 401 && code != 438 {
			return resp, nil
		}
		if code == 401 && c.key != nil {
			return resp, nil // signed and still refused: bad credentials
		}
		realm, nonce := resp.attrs[attrRealm], resp.attrs[attrNonce]
		if realm == nil || nonce == nil {
			return nil, fmt.Errorf("method %#x: %d without realm and nonce", method, code)
		}
		c.realm, c.nonce = string(realm), string(nonce)
		c.key = longTermKey(c.user, c.realm, c.pass)
	}
	return nil, fmt.Errorf("method %#x: authentication did not converge", method)
}

func lifetimeAttr(d time.Duration) stunAttr {
	return stunAttr{attrLifetime, binary.BigEndian.AppendUint32(nil, uint32(d/time.Second))}
}

// allocate asks for a UDP relay. It returns the error code (0 on success),
// whether the response was signed with the client's key, and the relayed
// address on success.
func (c *turnClient) allocate() (code int, signed bool, relay netip.AddrPort, err error) {
	resp, err := c.request(methodAllocate, stunAttr{attrRequestedTransport, []byte{17, 0, 0, 0}})
	if err != nil {
		return 0, false, relay, err
	}
	if code = resp.errorCode(); code == 0 {
		relay, err = resp.xorAddr(attrXORRelayedAddress)
	}
	return code, resp.signedWith(c.key), relay, err
}

// refresh refreshes the allocation (lifetime 0 deletes it) and returns the
// error code.
func (c *turnClient) refresh(lifetime time.Duration) (int, error) {
	resp, err := c.request(methodRefresh, lifetimeAttr(lifetime))
	if err != nil {
		return 0, err
	}
	return resp.errorCode(), nil
}

// permit installs a permission for peer and returns the error code.
func (c *turnClient) permit(peer netip.AddrPort) (int, error) {
	resp, err := c.request(methodCreatePermission, stunAttr{attrXORPeerAddress, xorAddrValue(peer)})
	if err != nil {
		return 0, err
	}
	return resp.errorCode(), nil
}

// send relays data to peer in a Send indication.
func (c *turnClient) send(peer netip.AddrPort, data []byte) error {
	raw := encodeSTUN(methodSend|classIndication, newTID(), nil,
		stunAttr{attrXORPeerAddress, xorAddrValue(peer)}, stunAttr{attrData, data})
	if _, err := c.conn.Write(raw); err != nil {
		return fmt.Errorf("send indication: %w", err)
	}
	return nil
}

// readData waits for the next Data indication and returns its payload and
// the peer it came from.
func (c *turnClient) readData(deadline time.Time) ([]byte, netip.AddrPort, error) {
	for {
		m, err := c.read(deadline)
		if err != nil {
			return nil, netip.AddrPort{}, fmt.Errorf("read data indication: %w", err)
		}
		if m.typ != methodData|classIndication {
			continue
		}
		from, err := m.xorAddr(attrXORPeerAddress)
		return m.attrs[attrData], from, err
	}
}
