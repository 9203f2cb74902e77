package edge

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/mmsg"
)

// Adopt is Bind for a successor: the sockets of every address l names that
// ex passed are made of their descriptors (files, indexed by the
// descriptions), wrapped as Bind wraps them with l's TLS configuration,
// PROXY set-up, caps and tracking; an address l names that nothing passed
// is bound fresh, as Bind does. A passed UDP group keeps its sockets as
// they are, whatever l.Sockets says (a socket more or less would re-hash
// the group's flows). Passed address locks are adopted, not taken again
// (that fails while the old process holds them). Matching is by the
// address as written (and kind, for stream listeners): the n-th
// occurrence of an address in l takes the n-th one passed. Adopt
// duplicates what it keeps and never closes files: the caller closes them
// all, so a passed socket l no longer names is closed here with them (and
// in the old process by Release). On error it closes what it made.
func Adopt(l Listen, ex Export, files []*os.File) (*Sockets, error) {
	s := &Sockets{passed: map[int]net.Listener{}}
	s.streams.refused = l.Refused
	s.SetConnLimits(l.Limits)
	if err := s.adopt(l, ex, files); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// passedFile returns files[i].
func passedFile(files []*os.File, i int) (*os.File, error) {
	if i < 0 || i >= len(files) || files[i] == nil {
		return nil, fmt.Errorf("adopt: descriptor %d of %d: %w", i, len(files), ErrBadExport)
	}
	return files[i], nil
}

func (s *Sockets) adopt(l Listen, ex Export, files []*os.File) error {
	n := l.Sockets
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	// The passed groups of each address, in order.
	groups := map[string][][]ExportedUDP{}
	for i, u := range ex.UDP {
		if i == 0 || u.Group != ex.UDP[i-1].Group {
			groups[u.Addr] = append(groups[u.Addr], nil)
		}
		g := groups[u.Addr]
		g[len(g)-1] = append(g[len(g)-1], u)
	}
	locks := map[string]ExportedLock{}
	for _, lk := range ex.Locks {
		locks[lk.Key] = lk
	}
	plan := make([][]ExportedUDP, len(l.UDP))
	for i, addr := range l.UDP {
		if q := groups[addr]; len(q) > 0 {
			plan[i], groups[addr] = q[0], q[1:]
			continue
		}
		// Fresh, as Bind: locked and probed before any socket binds.
		if err := s.lockFixed(addr); err != nil {
			return err
		}
	}
	for i, addr := range l.UDP {
		if plan[i] == nil {
			if err := s.bindGroup(addr, n, l.Buffer); err != nil {
				return err
			}
			continue
		}
		if err := s.adoptGroup(addr, plan[i], locks, files); err != nil {
			return err
		}
	}
	if len(l.TLS)+len(l.TCPTLS) > 0 && l.TLSConfig == nil {
		return errors.New("listen tls: no tls configuration")
	}
	listeners := map[kindAddr][]int{}
	for i, el := range ex.Listeners {
		k := kindAddr{el.Kind, el.Addr}
		listeners[k] = append(listeners[k], i)
	}
	for _, k := range l.streamAddrs() {
		if q := listeners[k]; len(q) > 0 {
			listeners[k] = q[1:]
			raw, err := adoptListener(ex.Listeners[q[0]], files)
			if err != nil {
				return err
			}
			s.serveListener(l, k.kind, k.addr, raw)
			s.passed[q[0]] = s.listeners[len(s.listeners)-1].public[0]
			continue
		}
		raw, err := net.Listen("tcp", k.addr)
		if err != nil {
			return fmt.Errorf("listen tcp %s: %w", k.addr, err)
		}
		s.serveListener(l, k.kind, k.addr, raw.(*net.TCPListener))
	}
	return nil
}

// adoptGroup makes a passed UDP group's sockets and adopts its lock.
func (s *Sockets) adoptGroup(addr string, group []ExportedUDP, locks map[string]ExportedLock, files []*os.File) error {
	for _, u := range group {
		f, err := passedFile(files, u.File)
		if err != nil {
			return err
		}
		sock, err := mmsg.FromFile(f)
		if err != nil {
			return err
		}
		s.UDP = append(s.UDP, sock)
		s.udpAddrs = append(s.udpAddrs, addr)
		if got := sock.LocalAddr().String(); got != u.Bound {
			return fmt.Errorf("adopt udp %s: bound to %s: %w", u.Bound, got, ErrBadExport)
		}
	}
	key, fixed := lockKey(addr)
	if !fixed {
		key, _ = lockKey(group[0].Bound)
	}
	lk, ok := locks[key]
	if !ok {
		// Passed without its lock: take it (refused while another holds it).
		taken, err := lockUDPAddress(key)
		if err != nil {
			return err
		}
		s.locks = append(s.locks, taken)
		return nil
	}
	f, err := passedFile(files, lk.File)
	if err != nil {
		return err
	}
	adopted, err := adoptLock(f, key)
	if err != nil {
		return err
	}
	s.locks = append(s.locks, adopted)
	return nil
}

// adoptLock duplicates a passed lock, checking it is the lock of key.
func adoptLock(f *os.File, key string) (*addrLock, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("adopt lock of udp %s: %w", key, err)
	}
	sa, err := unix.Getsockname(fd)
	if ua, ok := sa.(*unix.SockaddrUnix); err != nil || !ok || ua.Name != "@turnd/udp/"+key {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("adopt lock of udp %s: %w", key, ErrBadExport)
	}
	return &addrLock{fd: fd, key: key}, nil
}

// adoptListener makes a passed listening socket of its descriptor.
func adoptListener(el ExportedListener, files []*os.File) (*net.TCPListener, error) {
	f, err := passedFile(files, el.File)
	if err != nil {
		return nil, err
	}
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("adopt listener %s: %w", el.Bound, err)
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok || tl.Addr().String() != el.Bound {
		_ = ln.Close()
		return nil, fmt.Errorf("adopt listener %s: %w", el.Bound, ErrBadExport)
	}
	return tl, nil
}
