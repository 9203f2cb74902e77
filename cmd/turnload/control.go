package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/pion/stun/v4"
)

// Retransmission: RFC 8489 §6.2.1 starts at 500 ms; on loopback and under a
// burst, a shorter first RTO shows a lost request sooner without flooding a
// busy server, because it still doubles.
const (
	initialRTO = 250 * time.Millisecond
	maxRTO     = 2 * time.Second
)

// control runs STUN transactions (requests and their responses) for one
// client over its socket, with long-term credentials: the first request
// goes unsigned, the 401 gives REALM and NONCE, and every later request is
// signed (RFC 8489 §9.2).
type control struct {
	conn    *net.UDPConn // connected to the server
	user    string
	pass    string
	realm   string // fixed by --realm, else learnt from the 401
	timeout time.Duration

	nonce     stun.Nonce
	integrity stun.MessageIntegrity
	buf       []byte
}

func newControl(conn *net.UDPConn, o *options) *control {
	return &control{conn: conn, user: o.user, pass: o.pass, realm: o.realm, timeout: o.timeout, buf: make([]byte, 1500)}
}

// responseError is an error response to a request.
type responseError struct {
	method stun.Method
	code   stun.ErrorCode
	reason string
}

func (e *responseError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.method, e.code, e.reason)
}

// Unwrap lets callers match every error response with errRejected.
func (e *responseError) Unwrap() error { return errRejected }

// request sends a request with attrs and returns its success response,
// answering a 401 (first contact) or 438 (stale nonce) once each by signing.
func (c *control) request(method stun.Method, attrs ...stun.Setter) (*stun.Message, error) {
	const maxAuthRounds = 3 // 401 then 438 then give up: bounded
	for round := 0; ; round++ {
		res, err := c.roundTrip(method, attrs)
		if err != nil {
			return nil, err
		}
		if res.Type.Class == stun.ClassSuccessResponse {
			return res, nil
		}
		var code stun.ErrorCodeAttribute
		if err := code.GetFrom(res); err != nil {
			return nil, fmt.Errorf("%s: error response without ERROR-CODE: %w", method, errMalformed)
		}
		retry := (code.Code == stun.CodeUnauthorized && c.nonce == nil) || code.Code == stun.CodeStaleNonce
		if !retry || round+1 >= maxAuthRounds {
			return nil, &responseError{method: method, code: code.Code, reason: string(code.Reason)}
		}
		if err := c.learn(res); err != nil {
			return nil, err
		}
	}
}

// learn takes NONCE (and REALM, unless fixed) from a 401 or 438 and derives
// the long-term key: MD5(user ":" realm ":" pass).
func (c *control) learn(res *stun.Message) error {
	var nonce stun.Nonce
	if err := nonce.GetFrom(res); err != nil {
		return fmt.Errorf("read nonce: %w", errMalformed)
	}
	if c.realm == "" {
		var realm stun.Realm
		if err := realm.GetFrom(res); err != nil {
			return fmt.Errorf("read realm: %w", errMalformed)
		}
		c.realm = realm.String()
	}
	c.nonce = nonce
	c.integrity = stun.NewLongTermIntegrity(c.user, c.realm, c.pass)
	return nil
}

// roundTrip sends one request (signed once a nonce is known) and waits for
// the response with its transaction ID, retransmitting with a doubling RTO
// until c.timeout. Anything else arriving meanwhile is dropped: control runs
// only while no data flows on this socket.
func (c *control) roundTrip(method stun.Method, attrs []stun.Setter) (*stun.Message, error) {
	setters := append([]stun.Setter{stun.TransactionID, stun.NewType(method, stun.ClassRequest)}, attrs...)
	if c.nonce != nil {
		setters = append(setters, stun.NewUsername(c.user), stun.NewRealm(c.realm), c.nonce, c.integrity)
	}
	setters = append(setters, stun.Fingerprint)
	req, err := stun.Build(setters...)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", method, err)
	}
	deadline := time.Now().Add(c.timeout)
	rto := initialRTO
	for {
		if _, err := c.conn.Write(req.Raw); err != nil {
			return nil, fmt.Errorf("send %s: %w", method, err)
		}
		wait := time.Now().Add(rto)
		if wait.After(deadline) {
			wait = deadline
		}
		res, err := c.await(req.TransactionID, wait)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("read %s response: %w", method, err)
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%s: %w after %v", method, errTimeout, c.timeout)
		}
		rto = min(2*rto, maxRTO)
	}
}

// await reads until the response to id arrives or the deadline passes.
func (c *control) await(id [stun.TransactionIDSize]byte, deadline time.Time) (*stun.Message, error) {
	if err := c.conn.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	for {
		n, err := c.conn.Read(c.buf)
		if err != nil {
			return nil, err
		}
		if !stun.IsMessage(c.buf[:n]) {
			continue // late ChannelData
		}
		m := &stun.Message{Raw: append([]byte(nil), c.buf[:n]...)}
		if m.Decode() != nil || m.TransactionID != id {
			continue
		}
		if m.Type.Class == stun.ClassSuccessResponse || m.Type.Class == stun.ClassErrorResponse {
			return m, nil
		}
	}
}
