package e2e

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/pion/stun/v4"
)

// frame is one TURN frame a wireTap saw: a STUN message or ChannelData.
type frame struct {
	channel uint16           // ChannelData's channel number, 0 for STUN
	typ     stun.MessageType // STUN only
	data    []byte           // the application data it carries (ChannelData, or a Send/Data indication's DATA)
	attrs   []stun.AttrType  // STUN only, in wire order
}

// wireTap sits between pion's client and its socket and notes every frame
// each way, so a test sees on the wire what the client did (a ChannelBind
// answered, data carried on the channel) rather than trusting the client.
type wireTap struct {
	net.PacketConn
	mu      sync.Mutex
	out, in []frame
	nonce   stun.Nonce // the server's latest
	realm   stun.Realm
}

// ReadFrom notes the frame it passes up.
func (w *wireTap) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := w.PacketConn.ReadFrom(p)
	if err == nil {
		w.note(&w.in, p[:n])
	}
	return n, from, err
}

// WriteTo notes the frame it passes down.
func (w *wireTap) WriteTo(p []byte, to net.Addr) (int, error) {
	w.note(&w.out, p)
	return w.PacketConn.WriteTo(p, to)
}

// RemoteAddr is the stream's server end, or nil for a UDP socket: pion's
// client asks its conn for it to tell the server's ChannelData apart.
func (w *wireTap) RemoteAddr() net.Addr {
	if c, ok := w.PacketConn.(interface{ RemoteAddr() net.Addr }); ok {
		return c.RemoteAddr()
	}
	return nil
}

func (w *wireTap) note(dir *[]frame, b []byte) {
	var f frame
	switch {
	case len(b) >= 4 && b[0]&0xC0 == 0x40:
		f.channel = binary.BigEndian.Uint16(b)
		if n := int(binary.BigEndian.Uint16(b[2:])); 4+n <= len(b) {
			f.data = bytes.Clone(b[4 : 4+n])
		}
	case stun.IsMessage(b):
		m := &stun.Message{Raw: bytes.Clone(b)}
		if m.Decode() != nil {
			return
		}
		f.typ = m.Type
		f.data, _ = m.Get(stun.AttrData)
		for _, a := range m.Attributes {
			f.attrs = append(f.attrs, a.Type)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		var nonce stun.Nonce
		if dir == &w.in && nonce.GetFrom(m) == nil {
			w.nonce = nonce
			_ = w.realm.GetFrom(m)
		}
		*dir = append(*dir, f)
		return
	default:
		return
	}
	w.mu.Lock()
	*dir = append(*dir, f)
	w.mu.Unlock()
}

// carrier returns the last frame sent (out) or received that carried data.
func (w *wireTap) carrier(out bool, data []byte) (frame, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	frames := w.in
	if out {
		frames = w.out
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if bytes.Equal(frames[i].data, data) {
			return frames[i], true
		}
	}
	return frame{}, false
}

// sent returns the STUN messages of type typ sent so far.
func (w *wireTap) sent(typ stun.MessageType) []frame {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []frame
	for _, f := range w.out {
		if f.channel == 0 && f.typ == typ {
			out = append(out, f)
		}
	}
	return out
}

// count is how many STUN messages of type typ were received.
func (w *wireTap) count(typ stun.MessageType) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, f := range w.in {
		if f.channel == 0 && f.typ == typ {
			n++
		}
	}
	return n
}

// credentials are the realm and latest nonce the server handed out.
func (w *wireTap) credentials() (stun.Realm, stun.Nonce) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.realm, w.nonce
}

// readDeadline is how long a test waits for one relayed datagram or chunk on loopback.
const readDeadline = 5 * time.Second
