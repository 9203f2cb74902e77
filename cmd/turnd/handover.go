package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/turnd/turnd/internal/handover"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/server"
)

// handoverVersion is the version of handoverState this binary writes and
// the only one it reads; a successor that reads no version we write is
// refused before anything stops.
const handoverVersion = 1

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

	busy      sync.Mutex    // one hand-over at a time
	committed chan struct{} // closed once a successor serves: what stayed drains
	once      sync.Once
	successor int
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return // closed: stop or a hand-over
				}
				go h.serveConn(c)
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

// serveConn answers one connection: an upgrade request, or a successor.
func (h *handoverd) serveConn(c *handover.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), h.d.cfg.Handover.Timeout)
	defer cancel()
	req, err := c.ReadRequest(ctx)
	if err != nil {
		h.log.Info("hand-over request unreadable", "err", err)
		return
	}
	switch req.Kind {
	case handover.KindUpgrade:
		pid, err := h.upgrade()
		if err != nil {
			h.log.Warn("upgrade failed; serving on", "err", err)
		}
		_ = c.AnswerUpgrade(pid, err)
	case handover.KindTakeOver:
		if err := h.handOver(ctx, c, req, nil); err != nil {
			h.log.Warn("hand-over failed; serving on", "successor", req.PID, "err", err)
		}
	}
}

// upgrade starts the successor with one end of a socket pair and hands
// over to it; a successor that fails is killed.
func (h *handoverd) upgrade() (int, error) {
	parent, child, err := handover.Pair()
	if err != nil {
		return 0, err
	}
	defer parent.Close()
	cmd := exec.Command(h.exe, h.args...)
	cmd.ExtraFiles = []*os.File{child} // descriptor 3
	cmd.Env = append(os.Environ(), handover.EnvFD+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	err = cmd.Start()
	_ = child.Close()
	if err != nil {
		return 0, fmt.Errorf("start successor %s: %w", h.exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped whatever happens
	ctx, cancel := context.WithTimeout(context.Background(), h.d.cfg.Handover.Timeout)
	defer cancel()
	err = func() error {
		req, err := parent.ReadRequest(ctx)
		if err != nil {
			return fmt.Errorf("successor pid %d: %w", cmd.Process.Pid, h.exitedOr(exited, err))
		}
		if req.Kind != handover.KindTakeOver {
			return fmt.Errorf("successor pid %d sent an upgrade request", cmd.Process.Pid)
		}
		if err := h.handOver(ctx, parent, req, exited); err != nil {
			return fmt.Errorf("successor pid %d: %w", cmd.Process.Pid, err)
		}
		return nil
	}()
	if err != nil {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// exitedOr says how the successor exited if it has, else err.
func (h *handoverd) exitedOr(exited <-chan error, err error) error {
	select {
	case werr := <-exited:
		if werr == nil {
			return fmt.Errorf("exited: %w", err)
		}
		return fmt.Errorf("%v: %w", werr, err)
	case <-time.After(100 * time.Millisecond):
		return err
	}
}

// handOver runs the old side of the switch with a successor that sent
// req: freeze, offer, wait for it to serve, commit; any failure thaws.
func (h *handoverd) handOver(ctx context.Context, c *handover.Conn, req handover.Request, exited <-chan error) error {
	if !h.busy.TryLock() {
		_ = c.Refuse("another hand-over is in progress")
		return errors.New("another hand-over is in progress")
	}
	defer h.busy.Unlock()
	select {
	case <-h.committed:
		_ = c.Refuse("this turnd has handed over already")
		return errors.New("handed over already")
	default:
	}
	if st := h.d.machine.Status(); st.Phase != drain.Serving {
		_ = c.Refuse("turnd is " + st.Phase.String())
		return fmt.Errorf("not serving (%s)", st.Phase)
	}
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
	for _, f := range extra {
		_ = f.Close()
	}
	if err == nil {
		err = c.AwaitServing(ctx)
	}
	if err != nil {
		frozen.Thaw()
		if exited != nil {
			err = h.exitedOr(exited, err)
		}
		return err
	}
	moved, stayed := frozen.Commit()
	_ = c.Commit() // the successor serves whether or not it hears this
	h.successor = req.PID
	h.log.Info("handed over", "successor", req.PID, "allocations_moved", moved, "allocations_stayed", stayed,
		"frozen", time.Since(start).Round(time.Microsecond))
	h.afterCommit(req.PID)
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
		f, err := tl.File()
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
// HTTP port, the hand-over sockets; what stayed (TLS, RFC 6062) drains.
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
