package bindings

import (
	"errors"
	"net/netip"
)

// Families is a set of address families of relayed addresses.
type Families uint8

const (
	V4 Families = 1 << iota
	V6
	Both = V4 | V6
)

// Has reports whether f includes every family of g.
func (f Families) Has(g Families) bool { return f&g == g && g != 0 }

// Of is the family of addr (an IPv4-mapped address is IPv4).
func Of(addr netip.Addr) Families {
	if addr.Unmap().Is4() {
		return V4
	}
	return V6
}

// Index is 0 for V4 and 1 for V6: the slot of a family in Relayed.
func (f Families) Index() int {
	if f == V6 {
		return 1
	}
	return 0
}

// Want is what an Allocate asks of the relay.
type Want struct {
	Families Families
	// Port is a port held for a RESERVATION-TOKEN (RFC 8656 §7.2 step 5);
	// 0: any.
	Port int
	// Even asks for an even port (EVEN-PORT, R=0); Reserve also holds the
	// next port for a token (R=1).
	Even, Reserve bool
	// DontFragment sets DF on the relayed datagrams (DONT-FRAGMENT).
	DontFragment bool
	// TCP asks for an RFC 6062 relay: a listener, and peer connections.
	TCP  bool
	User string
}

// Relayed is what the relay opened for a Want: an address per family
// (index Families.Index), or why that family was refused (ErrNoPort,
// ErrNoFamily), for ADDRESS-ERROR-CODE; and the partner port held for a
// reservation (0: none).
type Relayed struct {
	Addr    [2]netip.AddrPort
	Refused [2]error
	Held    int
}

var (
	// ErrNoPort: every port of the relay range is taken (508).
	ErrNoPort = errors.New("no free relay port")
	// ErrNoFamily: turnd has no relay address of the family (440).
	ErrNoFamily = errors.New("no relay address of the family")
)
