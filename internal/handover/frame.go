package handover

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

const (
	// maxFrame bounds one message; the state of 10 000 allocations is
	// about 7 MB, so this leaves room without trusting any length.
	maxFrame = 64 << 20
	// batch is the most descriptors per sendmsg (the kernel allows 253).
	batch = 200
	// maxFiles bounds an offer's announced count before any is received.
	maxFiles = 1 << 20
)

// Message types on the wire.
const (
	typeUpgrade   = "upgrade"   // CLI → old: start a successor
	typeUpgraded  = "upgraded"  // old → CLI: the successor serves {pid}
	typeHello     = "hello"     // new → old: {versions, pid}
	typeError     = "error"     // either way: {reason}, ends the conversation
	typeOffer     = "offer"     // old → new: {version, state, names, files}
	typeFiles     = "files"     // old → new: {files} descriptors ride with it
	typeServing   = "serving"   // new → old
	typeFailed    = "failed"    // new → old: {reason}
	typeCommitted = "committed" // old → new
)

// message is every frame: one flat struct keeps the codec to one place.
type message struct {
	Type     string   `json:"type"`
	Versions []int    `json:"versions,omitempty"`
	PID      int      `json:"pid,omitempty"`
	Version  int      `json:"version,omitempty"`
	State    []byte   `json:"state,omitempty"`
	Names    []string `json:"names,omitempty"`
	Files    int      `json:"files,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

func knownType(t string) bool {
	switch t {
	case typeUpgrade, typeUpgraded, typeHello, typeError, typeOffer, typeFiles,
		typeServing, typeFailed, typeCommitted:
		return true
	}
	return false
}

// encodeFrame returns the message with its 4-byte big-endian length.
func encodeFrame(m message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	if len(body) > maxFrame {
		return nil, fmt.Errorf("encode %s message: %d bytes over the %d-byte cap", m.Type, len(body), maxFrame)
	}
	buf := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	return append(buf, body...), nil
}

// readFrame reads one message. Memory grows with the bytes that arrive,
// not with the length announced, so a lying peer costs at most what it
// sends. io.EOF before the first byte is ErrClosed.
func readFrame(r io.Reader) (message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return message{}, ErrClosed
		}
		return message{}, fmt.Errorf("read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return message{}, fmt.Errorf("read frame: %d bytes over the %d-byte cap", n, maxFrame)
	}
	var body bytes.Buffer
	body.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&body, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return message{}, fmt.Errorf("read frame of %d bytes: %w", n, err)
	}
	var m message
	if err := json.Unmarshal(body.Bytes(), &m); err != nil {
		return message{}, fmt.Errorf("decode frame: %w", err)
	}
	if !knownType(m.Type) {
		return message{}, fmt.Errorf("decode frame: unknown message type %q", m.Type)
	}
	return m, nil
}
