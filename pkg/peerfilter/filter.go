package peerfilter

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Options are the operator's peer rules, as written in the config file.
type Options struct {
	// AllowLoopback lets peers be 127.0.0.0/8 or ::1. Loopback is judged
	// before the lists, so an Allowed entry alone never opens it; once it
	// is open, Denied entries can still close parts of it.
	AllowLoopback bool
	// Allowed entries (see ParseEntry) win over Denied and the built-in list.
	Allowed []string
	// Denied entries add to the built-in list.
	Denied []string
}

// Filter judges peer addresses. It is immutable and safe for concurrent use;
// to change the rules, build a new Filter with New and swap it in.
type Filter struct {
	allowLoopback bool
	allowed       rangeSet
	denied        rangeSet // Options.Denied
	builtin       rangeSet // BuiltinDenied
}

// New builds a Filter from o. It reports every bad entry at once, each
// prefixed with its list and index ("denied[2]: ...").
func New(o Options) (*Filter, error) {
	var errs []error
	parse := func(list string, entries []string) []Range {
		out := make([]Range, 0, len(entries))
		for i, s := range entries {
			r, err := ParseEntry(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", list, i, err))
				continue
			}
			out = append(out, r)
		}
		return out
	}
	allowed := parse("allowed", o.Allowed)
	denied := parse("denied", o.Denied)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Filter{
		allowLoopback: o.AllowLoopback,
		allowed:       newRangeSet(allowed),
		denied:        newRangeSet(denied),
		builtin:       newRangeSet(BuiltinDenied()),
	}, nil
}

// Allowed reports whether a client may relay to ip. A nil or malformed ip is
// denied. It does not allocate.
func (f *Filter) Allowed(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	return f.AllowedAddr(a)
}

// AllowedAddr reports whether a client may relay to a.
//
// The address is judged in every form it has: itself (an IPv4-mapped address
// is simply its IPv4 address) and the IPv4 address a NAT64, 6to4 or
// IPv4-compatible address embeds. It is allowed only if every form is. One
// form is judged in order: loopback is denied unless Options.AllowLoopback;
// else an Allowed entry allows it; else a Denied entry denies it; else a
// built-in entry denies it, except loopback that AllowLoopback opened; else
// it is allowed.
//
// Hot path: runs for every CreatePermission and ChannelBind peer; it must not
// allocate (BenchmarkAllowedAddr and TestAllowedAddrDoesNotAllocate guard it).
func (f *Filter) AllowedAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	if !f.allowedForm(a) {
		return false
	}
	if v4, ok := embeddedIPv4(a); ok {
		return f.allowedForm(v4)
	}
	return true
}

func (f *Filter) allowedForm(a netip.Addr) bool {
	loopback := a.IsLoopback()
	switch {
	case loopback && !f.allowLoopback:
		return false
	case f.allowed.contains(a):
		return true
	case f.denied.contains(a):
		return false
	case loopback:
		return true // opened by AllowLoopback; the built-in list denies it otherwise
	default:
		return !f.builtin.contains(a)
	}
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries for
// translation or tunnelling, where packets sent to it end up at that IPv4
// address: NAT64 64:ff9b::/96 (last 32 bits), 6to4 2002::/16 (bits 16-48),
// SIIT ::ffff:0:0:0/96 (last 32 bits) and IPv4-compatible ::/96 (last 32
// bits; :: and ::1 are not addresses of that kind). a must already be unmapped.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case isZero(b[:12]):
		if isZero(b[12:15]) && b[15] <= 1 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && isZero(b[4:12]):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case isZero(b[:8]) && b[8] == 0xff && b[9] == 0xff && isZero(b[10:12]):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	}
	return netip.Addr{}, false
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
