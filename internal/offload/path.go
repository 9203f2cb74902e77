package offload

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Options says where the kernel path attaches and how large its tables are.
type Options struct {
	Interfaces []string // names; empty: every non-loopback, up, Ethernet interface
	MaxEntries int      // per direction; 0: 65536
	MaxSlots   int      // 0: 65536

	fault uint32 // tests only: a FAULT_ hook of bpf/relay.c; 0: none
}

const defaultSize = 65536

// Path is the loaded program, its maps and its links. It is safe for
// concurrent use.
type Path struct {
	// mu guards closed and the slot allocator; the maps themselves are
	// safe for concurrent use, so Put, Delete and Count share it.
	mu       sync.RWMutex
	closed   bool
	objs     relayObjects
	links    []link.Link
	ifaces   []string
	ncpu     int
	maxSlots uint32
	slots    slotQueue
}

// Open loads the program with tables sized by o and attaches it with tcx at
// the ingress of each interface. It must run in the network namespace of
// those interfaces (on a locked thread when that is not the process's).
// When an attachment fails, what was attached is detached again. It needs
// CAP_BPF and CAP_NET_ADMIN, and forwarding on lo (see ErrForwarding).
// Traffic it relays skips the host's netfilter hooks, as all tc redirects do.
func Open(o Options) (*Path, error) {
	if err := checkCaps(); err != nil {
		return nil, err
	}
	if err := checkForwarding(); err != nil {
		return nil, err
	}
	ifs, err := interfaces(o.Interfaces)
	if err != nil {
		return nil, err
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("count possible CPUs: %w", err)
	}
	p := &Path{ncpu: ncpu, maxSlots: uint32(orDefault(o.MaxSlots))}
	if err := load(&p.objs, orDefault(o.MaxEntries), int(p.maxSlots), len(ifs), o.fault); err != nil {
		return nil, err
	}
	for _, ifc := range ifs {
		if err := p.objs.Egress.Put(uint32(ifc.index), uint8(1)); err != nil {
			p.release()
			return nil, fmt.Errorf("allow egress by %s: %w", ifc.name, err)
		}
	}
	for _, ifc := range ifs {
		l, err := link.AttachTCX(link.TCXOptions{
			Interface: ifc.index,
			Program:   p.objs.Relay,
			Attach:    ebpf.AttachTCXIngress,
		})
		if err != nil {
			p.release()
			if errors.Is(err, ebpf.ErrNotSupported) {
				err = fmt.Errorf("%w: %w", ErrNoTCX, err)
			}
			return nil, fmt.Errorf("attach to %s ingress: %w", ifc.name, err)
		}
		p.links = append(p.links, l)
		p.ifaces = append(p.ifaces, ifc.name)
	}
	return p, nil
}

func orDefault(n int) int {
	if n <= 0 {
		return defaultSize
	}
	return n
}

// load loads the collection with the given table sizes and test hook into
// objs.
func load(objs *relayObjects, entries, slots, ifaces int, fault uint32) error {
	spec, err := loadRelay()
	if err != nil {
		return fmt.Errorf("read relay program: %w", err)
	}
	if err := spec.Variables[relayVarFault].Set(fault); err != nil {
		return fmt.Errorf("set test hook: %w", err)
	}
	spec.Maps[relayMapUplink].MaxEntries = uint32(entries)
	spec.Maps[relayMapDownlink].MaxEntries = uint32(entries)
	spec.Maps[relayMapSlots].MaxEntries = uint32(slots)
	spec.Maps[relayMapEgress].MaxEntries = uint32(max(ifaces, 1))
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		var ve *ebpf.VerifierError
		switch {
		case errors.As(err, &ve):
			err = fmt.Errorf("%w: %w", ErrVerifier, err)
		case errors.Is(err, unix.EPERM):
			// Not cilium's own text: its hint at RLIMIT_MEMLOCK misleads
			// since Linux 5.11, which charges BPF memory to the cgroup.
			err = fmt.Errorf("%w (%w)", ErrPrivilege, unix.EPERM)
		}
		return fmt.Errorf("load relay program: %w", err)
	}
	return nil
}

// Interfaces returns the names of the interfaces the program is attached to.
func (p *Path) Interfaces() []string {
	return append([]string(nil), p.ifaces...)
}

// Close detaches every link and frees the maps; datagrams go to user space
// from then on. Later calls return nil.
func (p *Path) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.release()
}

func (p *Path) release() error {
	var errs []error
	// Links first, so no packet meets a map being freed under it.
	for _, l := range p.links {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach: %w", err))
		}
	}
	p.links = nil
	if err := p.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("free maps: %w", err))
	}
	return errors.Join(errs...)
}

// Put installs both directions of e, replacing what the same keys held.
func (p *Path) Put(e Entry) error {
	return p.withKeys(e, func(k *keys) error {
		if err := p.objs.Downlink.Put(&k.down, &k.downVal); err != nil {
			return fmt.Errorf("install downlink entry: %w", err)
		}
		if err := p.objs.Uplink.Put(&k.up, &k.upVal); err != nil {
			// Half an entry would relay one way only: take it back.
			_ = p.objs.Downlink.Delete(&k.down)
			return fmt.Errorf("install uplink entry: %w", err)
		}
		return nil
	})
}

// Delete removes both directions of e; an absent entry is not an error.
// A datagram arriving after it returns goes to user space; one the program
// is handling on another CPU at that moment may still be relayed.
func (p *Path) Delete(e Entry) error {
	return p.withKeys(e, func(k *keys) error {
		var errs []error
		if err := p.objs.Uplink.Delete(&k.up); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("remove uplink entry: %w", err))
		}
		if err := p.objs.Downlink.Delete(&k.down); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("remove downlink entry: %w", err))
		}
		return errors.Join(errs...)
	})
}

// withKeys encodes e and runs fn on its map keys while the maps are
// open: the read lock keeps Close from freeing them under fn.
func (p *Path) withKeys(e Entry, fn func(k *keys) error) error {
	k, err := e.encode(p.maxSlots)
	if err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	return fn(&k)
}
