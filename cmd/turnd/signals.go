package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/server"
)

// osSignals are the signals turnd handles, on two channels: Go drops a
// signal when its channel is full, so a burst of reload signals must never
// share a channel with the ones that stop turnd.
type osSignals struct {
	// stop carries SIGTERM, SIGINT, SIGUSR1 and SIGQUIT.
	stop chan os.Signal
	// reload carries SIGHUP and SIGUSR2. One slot: while a reload runs, any
	// number of further signals coalesce into one more reload.
	reload chan os.Signal
}

// notifySignals starts catching the signals turnd handles. It is called
// before turnd announces it is serving, so a signal sent right after that
// line is a drain request, never the default action (death).
func notifySignals() osSignals {
	s := osSignals{stop: make(chan os.Signal, 8), reload: make(chan os.Signal, 1)}
	signal.Notify(s.stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGQUIT)
	// SIGUSR2 is coturn's "reload certificates": certbot and cert-manager
	// hooks send it, and a default action would kill every live call.
	signal.Notify(s.reload, syscall.SIGHUP, syscall.SIGUSR2)
	return s
}

// watchSignals maps stop signals onto drain requests until stop is closed.
// SIGUSR1 is what coturn users send to drain; the first SIGINT drains like
// SIGTERM, so Ctrl-C twice stops at once.
func watchSignals(ch <-chan os.Signal, out chan<- drain.Signal, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case s := <-ch:
			d := drain.Terminate
			switch s {
			case syscall.SIGUSR1:
				d = drain.Drain
			case syscall.SIGQUIT:
				d = drain.Quit
			}
			select {
			case out <- d:
			case <-stop:
				return
			}
		}
	}
}

// watchReloads runs reload once per signal on ch until stop is closed. It
// runs on a goroutine of its own: a slow reload must not hold up a drain.
func watchReloads(ch <-chan os.Signal, stop <-chan struct{}, reload func()) {
	for {
		select {
		case <-stop:
			return
		case <-ch:
			reload()
		}
	}
}

// reload re-reads the config file on SIGHUP. An invalid file changes nothing.
func reload(path string, srv *server.Server, log *slog.Logger, level *slog.LevelVar) {
	if path == "" {
		log.Warn("reload: running the embedded config, there is no file to reload")
		return
	}
	cfg, err := config.Load(path)
	if err != nil {
		// The server never saw this one: count it here, once.
		srv.ReloadFailed()
		log.Error("reload refused, keeping the running config", "file", path, "err", err)
		return
	}
	restart, err := srv.Reload(cfg) // counts its own outcome
	if len(restart) > 0 {
		log.Warn("reload: these settings need a restart and keep their running values", "paths", restart)
	}
	if err != nil {
		log.Error("reload refused, keeping the running config", "file", path, "err", err)
		return
	}
	level.Set(parseLevel(cfg.Log.Level))
	log.Info("reloaded", "file", path)
}
