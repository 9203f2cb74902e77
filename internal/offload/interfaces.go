package offload

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// iface is one interface to attach to.
type iface struct {
	name  string
	index int
}

// linkInfo is what netlink says of one interface.
type linkInfo struct {
	iface
	up, loopback, ether bool
}

// interfaces resolves names, or picks every up, non-loopback Ethernet
// interface when there are none. It reads the links over netlink, so it sees
// the calling thread's network namespace (sysfs would show the mount's).
func interfaces(names []string) ([]iface, error) {
	links, err := listLinks()
	if err != nil {
		return nil, err
	}
	var out []iface
	if len(names) == 0 {
		for _, l := range links {
			if l.up && !l.loopback && l.ether {
				out = append(out, l.iface)
			}
		}
		if len(out) == 0 {
			return nil, ErrNoInterface
		}
		return out, nil
	}
	for _, n := range names {
		i := slices.IndexFunc(links, func(l linkInfo) bool { return l.name == n })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: %s: no such interface", ErrInterface, n)
		case !links[i].up:
			return nil, fmt.Errorf("%w: %s is down", ErrInterface, n)
		case !links[i].ether || links[i].loopback:
			return nil, fmt.Errorf("%w: %s is not Ethernet", ErrInterface, n)
		}
		out = append(out, links[i].iface)
	}
	return out, nil
}

func listLinks() ([]linkInfo, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("parse interface list: %w", err)
	}
	var out []linkInfo
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		// struct ifinfomsg: family, pad, type, index, flags, change
		typ := binary.NativeEndian.Uint16(m.Data[2:4])
		index := int32(binary.NativeEndian.Uint32(m.Data[4:8]))
		flags := binary.NativeEndian.Uint32(m.Data[8:12])
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, fmt.Errorf("parse interface attributes: %w", err)
		}
		l := linkInfo{
			iface:    iface{index: int(index)},
			up:       flags&unix.IFF_UP != 0,
			loopback: flags&unix.IFF_LOOPBACK != 0,
			ether:    typ == unix.ARPHRD_ETHER,
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_IFNAME {
				l.name = string(trimNul(a.Value))
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func trimNul(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
