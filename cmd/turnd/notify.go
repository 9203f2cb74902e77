package main

import (
	"log/slog"

	"github.com/turnd/turnd/pkg/sdnotify"
)

// notifier tells systemd (Type=notify) what turnd is doing; without
// NOTIFY_SOCKET it does nothing. A failed notification is logged, never fatal.
type notifier struct {
	n   *sdnotify.Notifier
	log *slog.Logger
}

func newNotifier(log *slog.Logger) *notifier { return &notifier{n: sdnotify.FromEnv(), log: log} }

func (n *notifier) ready()    { n.check(n.n.Ready()) }
func (n *notifier) stopping() { n.check(n.n.Stopping()) }

func (n *notifier) status(s string) { n.check(n.n.Status(s)) }

func (n *notifier) check(err error) {
	if err != nil {
		n.log.Debug("sd_notify", "err", err)
	}
}
