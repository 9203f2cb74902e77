package relay

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
)

// HeldFile is a port held for a reservation (the P+1 of an EVEN-PORT R=1
// pair), duplicated for another process: its port and family, the bound
// socket, and how long the hold had left to run when exported.
type HeldFile struct {
	Port int
	V6   bool
	File *os.File
	Left time.Duration
}

// ExportHeld returns duplicates of every held reservation port, by port
// and family, for another process; they stay held here until ReleaseHeld
// (or their hold ends). Only while paused (ErrNotPaused otherwise), so the
// set is the one the allocation table's snapshot names. The files are the
// receiver's to close.
func (rl *Relay) ExportHeld() ([]HeldFile, error) {
	if !rl.isSettled() {
		return nil, fmt.Errorf("export held ports: %w", ErrNotPaused)
	}
	type entry struct {
		k liveKey
		h *held
	}
	rl.mu.Lock()
	hs := make([]entry, 0, len(rl.held))
	for k, h := range rl.held {
		hs = append(hs, entry{k, h})
	}
	rl.mu.Unlock()
	sort.Slice(hs, func(i, j int) bool { return hs[i].k.port < hs[j].k.port || hs[i].k.port == hs[j].k.port && !hs[i].k.v6 })
	now := time.Now()
	out := make([]HeldFile, 0, len(hs))
	for _, e := range hs {
		f, err := e.h.conn.File()
		switch {
		case errors.Is(err, net.ErrClosed):
			continue // its hold ended meanwhile
		case err != nil:
			closeHeldFiles(out)
			return nil, fmt.Errorf("export held port %d: %w", e.k.port, err)
		}
		out = append(out, HeldFile{Port: e.k.port, V6: e.k.v6, File: f, Left: max(0, e.h.until.Sub(now))})
	}
	return out, nil
}

// AdoptHeld holds, in the successor process, the reservation ports another
// process exported: Open with w.Port and Unhold find them as if this relay
// had reserved them. Each hold runs for its remaining time (Left), not a
// fresh reservationHold: the token the allocation table restores expires
// when it would have, and the port with it. On error nothing is adopted;
// the files stay the caller's either way.
func (rl *Relay) AdoptHeld(hs []HeldFile) error {
	var done []liveKey
	for _, hf := range hs {
		k, err := rl.adoptHeld(hf)
		if err != nil {
			for _, k := range done {
				if s := rl.takeHeld(k); s != nil {
					_ = s.Close()
				}
			}
			return fmt.Errorf("adopt held port %d: %w", hf.Port, err)
		}
		done = append(done, k)
	}
	return nil
}

func (rl *Relay) adoptHeld(hf HeldFile) (liveKey, error) {
	k := liveKey{v6: hf.V6, port: hf.Port}
	sock, err := mmsg.FromFile(hf.File)
	if err != nil {
		return k, err
	}
	local := sock.LocalAddr().(*net.UDPAddr)
	if local.Port != hf.Port || (local.IP.To4() == nil) != hf.V6 {
		_ = sock.Close()
		return k, fmt.Errorf("adopt %v: %w", local, ErrSocketMismatch)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.live[k] != nil || rl.held[k] != nil || rl.tcp[k] != nil {
		_ = sock.Close()
		return k, ErrPortTaken
	}
	rl.holdPort(k, sock, hf.Left)
	return k, nil
}

// ReleaseHeld gives up every held reservation port here: after a
// hand-over, the successor holds them (ExportHeld exported them all); on
// Close, nobody does. A held socket is in no epoll set, so closing this
// process's descriptor is all.
func (rl *Relay) ReleaseHeld() {
	rl.mu.Lock()
	hs := rl.held
	rl.held = make(map[liveKey]*held)
	rl.mu.Unlock()
	for _, h := range hs {
		if h.timer.Stop() {
			_ = h.conn.Close()
		}
	}
}

func closeHeldFiles(hs []HeldFile) {
	for _, h := range hs {
		_ = h.File.Close()
	}
}
