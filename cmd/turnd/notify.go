package main

import (
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/pkg/sdnotify"
)

// notifier tells systemd (Type=notify) what turnd is doing; without
// NOTIFY_SOCKET it does nothing. A failed notification is logged, never fatal.
type notifier struct {
	n   *sdnotify.Notifier
	log *slog.Logger
	// handedOff: the unit is the successor's; this process's drain must
	// not tell systemd the service stops.
	handedOff atomic.Bool
}

func newNotifier(log *slog.Logger) *notifier { return &notifier{n: sdnotify.FromEnv(), log: log} }

func (n *notifier) ready()    { n.check(n.n.Ready()) }
func (n *notifier) stopping() { n.send(n.n.Stopping) }

func (n *notifier) status(s string) { n.send(func() error { return n.n.Status(s) }) }

// send sends a notification unless the unit is the successor's now.
func (n *notifier) send(notify func() error) {
	if !n.handedOff.Load() {
		n.check(notify())
	}
}

// handOff makes the successor the unit's main process and waits until
// systemd has read that (so this process's exit is not the service's);
// later notifications are not sent.
func (n *notifier) handOff(successor int) {
	n.handedOff.Store(true)
	n.check(n.n.Notify("MAINPID=" + strconv.Itoa(successor)))
	n.check(n.n.Barrier(5 * time.Second))
}

func (n *notifier) check(err error) {
	if err != nil {
		n.log.Debug("sd_notify", "err", err)
	}
}
