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

// notifySignals starts catching the signals turnd handles. It is called
// before turnd announces it is serving, so a signal sent right after that
// line is a drain request, never the default action (death).
func notifySignals() chan os.Signal {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR2)
	return ch
}

// watchSignals maps OS signals onto drain requests until stop is closed.
// SIGUSR1 is what coturn users send to drain; the first SIGINT drains like
// SIGTERM, so Ctrl-C twice stops at once.
func watchSignals(ch chan os.Signal, out chan<- drain.Signal, stop <-chan struct{}, onHUP func()) {
	defer signal.Stop(ch)
	for {
		select {
		case <-stop:
			return
		case s := <-ch:
			var d drain.Signal
			switch s {
			case syscall.SIGHUP, syscall.SIGUSR2:
				// SIGUSR2 is coturn's "reload certificates": certbot and
				// cert-manager hooks send it, and a default action would
				// kill every live call.
				onHUP()
				continue
			case syscall.SIGUSR1:
				d = drain.Drain
			case syscall.SIGQUIT:
				d = drain.Quit
			default:
				d = drain.Terminate
			}
			select {
			case out <- d:
			case <-stop:
				return
			}
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
	if err == nil {
		var restart []string
		restart, err = srv.Reload(cfg)
		if len(restart) > 0 {
			log.Warn("reload: these settings need a restart and keep their running values", "paths", restart)
		}
	}
	if err != nil {
		srv.ReloadFailed()
		log.Error("reload refused, keeping the running config", "file", path, "err", err)
		return
	}
	level.Set(parseLevel(cfg.Log.Level))
	log.Info("reloaded", "file", path)
}
