package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/handover"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// takeOver is the successor's side of the switch: what the predecessor
// offered, until this process serves it or gives up.
type takeOver struct {
	c     *handover.Conn
	offer handover.Offer
	state handoverState
	pid   int // the predecessor's, for the log
}

// startTakeOver connects to the predecessor and reads its offer: over the
// socket pair it started this process with, or, with --take-over, over
// handover.socket. nil and no error: nobody to take over from.
func startTakeOver(ctx context.Context, cfg config.Config, flagged bool, log *slog.Logger) (*takeOver, error) {
	c, ok, err := handover.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("take over: %w", err)
	}
	if !ok {
		if !flagged {
			return nil, nil
		}
		if cfg.Handover.Socket == "" {
			return nil, errors.New("take over: --take-over needs handover.socket in the config")
		}
		c, err = handover.Dial(ctx, cfg.Handover.Socket, 0)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			log.Info("no turnd to take over from; starting fresh", "socket", cfg.Handover.Socket)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("take over: %w", err)
		}
	}
	t := &takeOver{c: c}
	if err := c.Hello(readsVersions(), os.Getpid()); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("take over: %w", err)
	}
	t.offer, err = c.ReceiveOffer(ctx)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("take over: %w", err)
	}
	if err := t.decode(); err != nil {
		t.fail(err)
		return nil, fmt.Errorf("take over: %w", err)
	}
	return t, nil
}

// decode reads the state strictly: an unknown field means a format this
// binary does not know under a version it does.
func (t *takeOver) decode() error {
	if !slices.Contains(readsVersions(), t.offer.Version) {
		return fmt.Errorf("offered state version %d, this binary reads %v", t.offer.Version, readsVersions())
	}
	d := json.NewDecoder(bytes.NewReader(t.offer.State))
	d.DisallowUnknownFields()
	if err := d.Decode(&t.state); err != nil {
		return fmt.Errorf("decode hand-over state: %w", err)
	}
	for _, i := range []int{t.state.HTTP, t.state.Socket} {
		if i < -1 || i >= t.state.Relays {
			return fmt.Errorf("hand-over state names descriptor %d of %d", i, t.state.Relays)
		}
	}
	if t.state.Relays < 0 || t.state.Relays > len(t.offer.Files) {
		return fmt.Errorf("hand-over state puts the relay sockets at %d of %d descriptors", t.state.Relays, len(t.offer.Files))
	}
	return nil
}

// inherit is what server.New builds from.
func (t *takeOver) inherit() *server.Inherit {
	if t == nil {
		return nil
	}
	return &server.Inherit{State: t.state.Server, Files: t.offer.Files[:t.state.Relays], Relays: t.offer.Files[t.state.Relays:]}
}

// file is descriptor i of the offer, nil for -1.
func (t *takeOver) file(i int) *os.File {
	if t == nil || i < 0 {
		return nil
	}
	return t.offer.Files[i]
}

// httpListener is the predecessor's HTTP listener if it still serves
// addr, else nil (the caller binds addr anew).
func (t *takeOver) httpListener(addr string) (net.Listener, error) {
	if t == nil {
		return nil, nil
	}
	f := t.file(t.state.HTTP)
	if f == nil || addr == "" {
		return nil, nil
	}
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("http listener passed by the predecessor: %w", err)
	}
	if !sameAddr(ln.Addr().String(), addr) {
		_ = ln.Close()
		return nil, nil
	}
	return ln, nil
}

// sameAddr reports whether bound is the address configured names.
func sameAddr(bound, configured string) bool {
	b, err1 := netip.ParseAddrPort(bound)
	c, err2 := netip.ParseAddrPort(configured)
	if err1 != nil || err2 != nil {
		return bound == configured
	}
	// Port 0 picked a port once: the one bound is it.
	port := c.Port() == 0 || b.Port() == c.Port()
	if c.Addr().IsUnspecified() && b.Addr().IsUnspecified() {
		return port
	}
	return b.Addr().Unmap() == c.Addr().Unmap() && port
}

// closeFiles closes the offered descriptors: what the process kept, it
// duplicated.
func (t *takeOver) closeFiles() {
	if t != nil {
		for _, f := range t.offer.Files {
			if f != nil {
				_ = f.Close()
			}
		}
		t.offer.Files = nil
	}
}

// fail tells the predecessor this process will not serve: it thaws.
func (t *takeOver) fail(err error) {
	if t == nil {
		return
	}
	_ = t.c.Fail(err.Error())
	t.closeFiles()
	_ = t.c.Close()
}

// serving tells the predecessor this process is ready, and waits for it
// to stop for good: only then may this process read a socket. The
// predecessor answers within its own handover.timeout (a commit, or a
// refusal or a closed socket when it thawed); twice that is the bound.
func (t *takeOver) serving(timeout time.Duration) error {
	defer t.c.Close()
	if err := t.c.Serving(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	return t.c.AwaitCommit(ctx)
}

// refusePredecessor tells a predecessor that started this process why it
// cannot take over (its config), so that turnd upgrade says so.
func refusePredecessor(err error) {
	if c, ok, _ := handover.FromEnv(); ok {
		_ = c.Fail(err.Error())
		_ = c.Close()
	}
}
