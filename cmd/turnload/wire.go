package main

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/pion/stun/v4"
)

// Framing of the data path. Everything here runs per datagram (hot path):
// no allocations, no stun.Message decoding.

// payloadHeader is the part of every payload turnload reads back: the send
// time (wall clock, Unix nanoseconds: the clock of the kernel's receive
// timestamps), the sending client's index and a sequence number. The rest
// is zeros.
const payloadHeader = 16

// Sizes of the framings around a payload.
const (
	channelHeader = 4  // RFC 8656 §12.4: channel number, length
	stunHeader    = 20 // RFC 8489 §5
	attrHeader    = 4
)

// dataIndication is the message type of a Data indication (method 0x007,
// indication class).
var dataIndication = stun.NewType(stun.MethodData, stun.ClassIndication).Value()

// putPayload writes the payload header.
func putPayload(p []byte, sent int64, client, seq uint32) {
	binary.BigEndian.PutUint64(p[0:8], uint64(sent))
	binary.BigEndian.PutUint32(p[8:12], client)
	binary.BigEndian.PutUint32(p[12:16], seq)
}

// readPayload reads the payload header back.
func readPayload(p []byte) (sent int64, client, seq uint32, ok bool) {
	if len(p) < payloadHeader {
		return 0, 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(p[0:8])), binary.BigEndian.Uint32(p[8:12]),
		binary.BigEndian.Uint32(p[12:16]), true
}

// frame is a prebuilt outgoing datagram: only the payload header (and, for
// a Send indication, part of the transaction ID) changes between sends.
type frame struct {
	buf        []byte
	payloadOff int
	txidOff    int // -1 for ChannelData, which has none
}

// newChannelFrame builds ChannelData for channel with a payload of size
// bytes. Over UDP the padding to a multiple of 4 is optional and omitted.
func newChannelFrame(channel uint16, size int) frame {
	b := make([]byte, channelHeader+size)
	binary.BigEndian.PutUint16(b[0:2], channel)
	binary.BigEndian.PutUint16(b[2:4], uint16(size))
	return frame{buf: b, payloadOff: channelHeader, txidOff: -1}
}

// newSendFrame builds a Send indication to peer carrying size bytes.
func newSendFrame(peer *net.UDPAddr, size int) (frame, error) {
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorPeerAddress{peer}, data(make([]byte, size)))
	if err != nil {
		return frame{}, fmt.Errorf("build send indication: %w", err)
	}
	p, off := stunData(m.Raw)
	if p == nil {
		return frame{}, fmt.Errorf("locate DATA in send indication: %w", errMalformed)
	}
	// The last 8 bytes of the transaction ID change per message, so no
	// two indications look like retransmissions of each other.
	return frame{buf: m.Raw, payloadOff: off, txidOff: 12}, nil
}

// stamp fills the frame's variable bytes.
func (f *frame) stamp(sent int64, client, seq uint32) {
	putPayload(f.buf[f.payloadOff:], sent, client, seq)
	if f.txidOff >= 0 {
		binary.BigEndian.PutUint32(f.buf[f.txidOff:], client)
		binary.BigEndian.PutUint32(f.buf[f.txidOff+4:], seq)
	}
}

// incomingPayload returns the application payload of a datagram from the
// server: ChannelData or a Data indication. Anything else (a late STUN
// response) yields nil.
func incomingPayload(b []byte) []byte {
	if len(b) >= channelHeader && b[0]&0xC0 == 0x40 {
		n := int(binary.BigEndian.Uint16(b[2:4]))
		if channelHeader+n > len(b) {
			return nil
		}
		return b[channelHeader : channelHeader+n]
	}
	if len(b) >= stunHeader && binary.BigEndian.Uint16(b[0:2]) == dataIndication {
		p, _ := stunData(b)
		return p
	}
	return nil
}

// stunData finds the DATA attribute of a STUN message by walking its
// attributes, and returns its value and offset.
func stunData(b []byte) ([]byte, int) {
	if len(b) < stunHeader {
		return nil, 0
	}
	end := min(len(b), stunHeader+int(binary.BigEndian.Uint16(b[2:4])))
	for off := stunHeader; off+attrHeader <= end; {
		t := binary.BigEndian.Uint16(b[off:])
		n := int(binary.BigEndian.Uint16(b[off+2:]))
		v := off + attrHeader
		if v+n > end {
			return nil, 0
		}
		if stun.AttrType(t) == stun.AttrData {
			return b[v : v+n], v
		}
		off = v + (n+3)&^3
	}
	return nil, 0
}
