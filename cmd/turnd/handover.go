package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/handover"
	"github.com/turnd/turnd/pkg/server"
)

// handoverVersion is the version of the state this binary writes (2: the
// server's state of version 2, with RFC 6062 relays); it reads every one
// in readsVersions. A successor that reads no version we write is refused
// at its hello, before anything stops.
const handoverVersion = 2

// readsVersions are the states a successor built from this binary reads.
func readsVersions() []int { return []int{1, 2} }

// handoverState is what passes to a successor besides the descriptors:
// the server's state, which descriptors are the HTTP listener and the
// hand-over socket (-1: none), and where the relay sockets the server
// lent begin.
type handoverState struct {
	Server json.RawMessage `json:"server"`
	HTTP   int             `json:"http"`
	Socket int             `json:"socket"`
	Relays int             `json:"relays"`
}

// handoverd is the old process's side: it answers `turnd upgrade` and
// successors on its hand-over sockets, one hand-over at a time.
type handoverd struct {
	d   *daemon
	log *slog.Logger
	// exe and args start the successor: the executable now at the path
	// this process was started from, with this process's arguments.
	exe  string
	args []string
	lns  []*handover.Listener // the PID's abstract socket, and handover.socket if set

	busy       sync.Mutex    // one hand-over at a time
	committed  chan struct{} // closed once a successor serves and was answered: what stayed drains
	once       sync.Once
	handedOver atomic.Bool // a successor serves: set at the commit, before committed closes
}

func newHandoverd(d *daemon) *handoverd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &handoverd{d: d, log: d.log, exe: exe, args: os.Args[1:], committed: make(chan struct{})}
}

// listen opens the hand-over sockets: the abstract one named after the
// PID always, handover.socket as passed by a predecessor or bound anew.
func (h *handoverd) listen(passed *os.File) error {
	// In a PID namespace another container's turnd on the host network may
	// hold this name: handover.socket still serves.
	if ln, err := handover.Listen(pidSocket(os.Getpid())); err != nil {
		h.log.Warn("turnd upgrade --pid will not reach this process", "err", err)
	} else {
		h.lns = append(h.lns, ln)
	}
	path := h.d.cfg.Handover.Socket
	if passed != nil {
		pl, err := handover.FileListener(passed)
		switch {
		case err == nil && pl.Addr() == path:
			h.lns = append(h.lns, pl)
			return nil
		case err == nil:
			_ = pl.Close() // the config names another path now
		default:
			h.log.Warn("hand-over socket passed by the predecessor unusable; binding it anew", "err", err)
		}
	}
	if path == "" {
		return nil
	}
	sl, err := handover.Listen(path)
	if err != nil {
		h.close()
		return fmt.Errorf("listen handover.socket: %w", err)
	}
	h.lns = append(h.lns, sl)
	return nil
}

// close closes the sockets without removing the file: after a hand-over
// the path is the successor's.
func (h *handoverd) close() {
	for _, ln := range h.lns {
		_ = ln.Close()
	}
}

// fileSocket is handover.socket's listener, nil if none.
func (h *handoverd) fileSocket() *handover.Listener {
	for _, ln := range h.lns {
		if ln.Addr() == h.d.cfg.Handover.Socket && h.d.cfg.Handover.Socket != "" {
			return ln
		}
	}
	return nil
}

// run accepts on every socket until stop; each connection is served on
// its own goroutine.
func (h *handoverd) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for _, ln := range h.lns {
		// The PID's socket takes upgrade requests only: any root process
		// on the host network reaches an abstract name.
		takeOvers := ln == h.fileSocket()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return // closed: stop or a hand-over
				}
				go h.serveConn(c, takeOvers)
			}
		}()
	}
	<-stop
	h.finish()
	wg.Wait()
}

// finish closes the sockets as the process ends: handover.socket's file is
// removed unless a successor holds it now.
func (h *handoverd) finish() {
	select {
	case <-h.committed:
		h.close()
		return
	default:
	}
	for _, ln := range h.lns {
		if ln == h.fileSocket() {
			_ = ln.Remove() // closes it too; leaves another process's file alone
		} else {
			_ = ln.Close()
		}
	}
}

// serveConn answers one connection: an upgrade request, or (takeOvers)
// a successor a supervisor started.
func (h *handoverd) serveConn(c *handover.Conn, takeOvers bool) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), h.d.cfg.Handover.Timeout)
	defer cancel()
	req, err := c.ReadRequest(ctx)
	if err != nil {
		h.log.Info("hand-over request unreadable", "err", err)
		return
	}
	switch {
	case req.Kind == handover.KindUpgrade:
		pid, err := h.upgrade()
		if err != nil {
			h.log.Warn("upgrade failed; serving on", "err", err)
		}
		// Answered before the drain of what stayed begins: with nothing
		// left, this process exits at once, and turnd upgrade must hear
		// of its success first.
		_ = c.AnswerUpgrade(pid, err)
		if err == nil {
			h.afterCommit(pid)
		}
	case !takeOvers:
		_ = c.Refuse("take-overs come through handover.socket")
	default:
		err := h.exclusive(func() error { return h.handOver(ctx, c, req, nil) })
		if err != nil {
			_ = c.Refuse(err.Error()) // unread if the offer was made
			h.log.Warn("hand-over failed; serving on", "successor", req.PID, "err", err)
			return
		}
		h.afterCommit(req.PID)
	}
}

// handOver runs the old side of the switch with a successor that sent
// req: freeze, offer, wait for it to serve, commit; any failure before
// the commit is sent thaws. It runs under exclusive; child is the
// successor this process started, nil for one a supervisor started.
func (h *handoverd) handOver(ctx context.Context, c *handover.Conn, req handover.Request, child *successor) error {
	v, ok := handover.Choose(req.Versions, []int{handoverVersion})
	if !ok {
		reason := fmt.Sprintf("state version %d unknown to the successor (it reads %v)", handoverVersion, req.Versions)
		_ = c.Refuse(reason)
		return errors.New(reason)
	}
	start := time.Now()
	frozen, err := h.d.srv.Freeze(ctx)
	if err != nil {
		_ = c.Refuse(err.Error())
		return err
	}
	offer, extra, err := h.offer(v, frozen)
	if err == nil {
		// Offer honours no context: a successor that stops reading is cut off.
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		err = c.Offer(offer)
		stop()
	}
	closeFiles(extra)
	if err == nil {
		err = c.AwaitServing(ctx)
	}
	// The successor reads once it hears the commit, so it is sent before
	// anything here lets go, and only to a successor still there.
	if err == nil && child != nil && child.gone() {
		err = errors.New("it exited after saying it serves")
	}
	if err == nil {
		err = c.Commit()
	}
	if err != nil {
		frozen.Thaw()
		if child != nil {
			err = child.why(err)
		}
		return err
	}
	moved, stayed := frozen.Commit()
	h.handedOver.Store(true) // no second hand-over; afterCommit follows once the caller answered
	h.log.Info("handed over", "successor", req.PID, "allocations_moved", moved, "allocations_stayed", stayed,
		"frozen", time.Since(start).Round(time.Microsecond))
	return nil
}

// offer is the frozen server plus this process's own sockets (the HTTP
// listener, the hand-over socket); extra are the duplicates to close once
// sent.
func (h *handoverd) offer(v int, frozen *server.Frozen) (handover.Offer, []*os.File, error) {
	st := handoverState{Server: frozen.State, HTTP: -1, Socket: -1}
	files := append([]*os.File(nil), frozen.Files...)
	names := append([]string(nil), frozen.Names[:len(frozen.Files)]...)
	var extra []*os.File
	if tl, ok := h.d.httpLn.(*net.TCPListener); ok {
		f, err := handover.Dup(tl, "http")
		if err != nil {
			return handover.Offer{}, nil, fmt.Errorf("pass the http listener: %w", err)
		}
		st.HTTP = len(files)
		files, names, extra = append(files, f), append(names, "http"), append(extra, f)
	}
	if ln := h.fileSocket(); ln != nil {
		f, err := ln.File()
		if err != nil {
			closeFiles(extra)
			return handover.Offer{}, nil, fmt.Errorf("pass the hand-over socket: %w", err)
		}
		st.Socket = len(files)
		files, names, extra = append(files, f), append(names, "handover"), append(extra, f)
	}
	st.Relays = len(files) // the lent relay sockets follow the files
	names = append(names, frozen.Names[len(frozen.Files):]...)
	b, err := json.Marshal(st)
	if err != nil {
		closeFiles(extra)
		return handover.Offer{}, nil, fmt.Errorf("encode hand-over state: %w", err)
	}
	return handover.Offer{Version: v, State: b, Names: names, Files: files, Fds: frozen.Fds}, extra, nil
}

// afterCommit hands the service to the successor: systemd's main PID, the
// HTTP port, the hand-over sockets; what stayed (TLS clients) drains.
func (h *handoverd) afterCommit(successor int) {
	h.d.notifier.handOff(successor)
	h.once.Do(func() { close(h.committed) })
	h.close()
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
