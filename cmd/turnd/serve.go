package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"

	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/httpapi"
	"github.com/turnd/turnd/pkg/metrics"
	"github.com/turnd/turnd/pkg/server"
	"github.com/turnd/turnd/pkg/traffic"
)

// serve runs turnd until its drain ends; the exit code is 0 for any stop
// the operator asked for, 1 when turnd could not start or a component failed.
func serve(path string, _, stderr io.Writer) int {
	// First, before anything can write a log line: a closed stderr must not
	// kill a relay that carries live calls.
	ignoreSIGPIPE()
	cfg := config.Embedded()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	sigs := notifySignals()
	// Log lines go through a queue that never blocks: a stalled stderr
	// reader must not stall the relay. Closed last, so the final lines
	// (the drain summary) are written out.
	logOut := newLogWriter(stderr, logQueueLines)
	defer logOut.Close(2 * time.Second)
	log, level := newLogger(logOut, cfg.Log.Format, cfg.Log.Level)
	logOut.ReportDropsTo(log)
	startProfiler(log)
	started := time.Now()
	// Before the first socket is bound, so every listener and relay socket
	// counts against the raised limit.
	nofile := raiseOpenFiles(log)

	reg := prometheus.NewRegistry()
	reg.MustRegister(goCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), logOut.collector())

	// The registry exists before both the drain (which waits on it) and the
	// server (which fills it), so neither needs the other to be built first.
	registry := allocation.NewRegistry(allocation.Limits{})
	notifier := newNotifier(log)
	drainStarted := make(chan struct{})
	report := drainReporter(log, notifier, registry.Expiry, drainStarted)
	// The server resolves alternate servers' names when a drain starts; a
	// change it has not read yet already says "look again".
	drainChanged := make(chan struct{}, 1)
	machine := drain.New(drain.Config{
		Delay:       cfg.Drain.Delay,
		Timeout:     cfg.Drain.Timeout,
		Allocations: registry,
		OnChange: func(st drain.Status) {
			report(st)
			select {
			case drainChanged <- struct{}{}:
			default:
			}
		},
	})
	totals := &traffic.Counters{}
	m, err := metrics.New(reg, metrics.Sources{Allocations: registry.ByTransport, Drain: machine.Status, Traffic: totals})
	if err != nil {
		log.Error("register metrics", "err", err)
		return 1
	}
	srv, err := server.New(server.Options{
		Config: cfg, Logger: log, Observer: m, Registry: registry, Traffic: totals, Accepting: machine.Accepting,
		DrainChanged: drainChanged,
	})
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}

	// Problems turnd runs with but an operator should fix: logged now and
	// listed in /status, where a dashboard or `turnd status` shows them.
	var warnings []string
	if w := ephemeralOverlap(cfg.Relay, readEphemeralRange); w != "" {
		log.Warn(w)
		warnings = append(warnings, w)
	}

	var httpLn net.Listener
	if cfg.HTTP.Address != "" {
		if httpLn, err = net.Listen("tcp", cfg.HTTP.Address); err != nil {
			log.Error("start", "err", fmt.Errorf("listen http %s: %w", cfg.HTTP.Address, err))
			_ = srv.Close()
			return 1
		}
	}
	if httpLn != nil {
		srv.AddOwnAddress(httpLn.Addr())
	}
	if cfg.PIDFile != "" {
		if err := os.WriteFile(cfg.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Error("start", "err", fmt.Errorf("write pidfile: %w", err))
			_ = srv.Close()
			return 1
		}
		defer os.Remove(cfg.PIDFile)
	}

	// The process is one oklog/run group: the first actor to return
	// interrupts all the others, and Run waits for every one of them.
	var g oklog.Group
	// Signals: SIGTERM/SIGINT/SIGUSR1 become drain requests, SIGQUIT a stop.
	// It must outlive nothing: the drain decides the end.
	signals := make(chan drain.Signal, 4)
	sigStop := make(chan struct{})
	g.Add(named("signals", func() error {
		watchSignals(sigs.stop, signals, sigStop)
		return nil
	}), func(error) { close(sigStop); signal.Stop(sigs.stop) })

	// Reloads (SIGHUP, SIGUSR2) apart from the stop signals: a reload can
	// take seconds, and a SIGTERM sent meanwhile must start the drain at once.
	reloadStop := make(chan struct{})
	g.Add(named("reload", func() error {
		watchReloads(sigs.reload, reloadStop, func() { reload(path, srv, log, level) })
		return nil
	}), func(error) { close(reloadStop); signal.Stop(sigs.reload) })

	// The drain ends the process. Every other actor is interrupted only after
	// it returns: the TURN sockets and /readyz must stay up for the whole drain.
	drainCtx, cancelDrain := context.WithCancel(context.Background())
	g.Add(named("drain", func() error {
		res := machine.Run(drainCtx, signals)
		if res.Reason == drain.DeadlineExpired && res.Remaining > 0 {
			m.ForceClosed(res.Remaining)
			srv.SetShutdownReason(server.EndDrainDeadline)
			log.Warn("drain deadline passed: closing remaining allocations", "allocations", res.Remaining)
		}
		log.Info("drain complete", "reason", res.Reason.String(), "trigger", res.Trigger.String(),
			"allocations_at_start", res.AtStart, "drained", max(0, res.AtStart-res.Remaining),
			"force_closed", res.Remaining, "duration", res.Duration.Round(time.Millisecond))
		return nil
	}), func(error) { cancelDrain() })

	// Drain progress: a log line every drainLogInterval while draining.
	progressStop := make(chan struct{})
	g.Add(named("drain-progress", func() error {
		ticker := time.NewTicker(drainLogInterval)
		defer ticker.Stop()
		drainProgress{log: log, status: machine.Status, count: registry.Count, expiry: registry.Expiry, now: time.Now}.
			run(drainStarted, progressStop, ticker.C)
		return nil
	}), func(error) { close(progressStop) })

	// TURN: closing it ends every allocation, so it runs until the drain is over.
	g.Add(named("turn", func() error {
		<-srv.Done()
		return errors.New("turn server stopped")
	}), func(error) {
		if err := srv.Close(); err != nil {
			log.Warn("close", "err", err)
		}
	})

	// HTTP: probes and metrics answer throughout the drain (readiness 503).
	if httpLn != nil {
		limits := httpapi.DefaultLimits()
		hs := httpapi.NewServer(httpapi.New(httpapi.Options{
			Version: version, Started: started, Allocations: registry.ByTransport, Expiry: registry.Expiry,
			Traffic: totals, Drain: machine.Status, Gatherer: reg, Warnings: warnings,
			Admin: httpapi.Admin{
				TokenFile: cfg.HTTP.AdminTokenFile, Sessions: srv.Sessions, Usage: srv.Usage, Disconnect: srv.Disconnect,
				Problem: func(err error) { log.Warn("admin request refused", "err", err) },
			},
		}), limits)
		g.Add(named("http", func() error {
			if err := hs.Serve(httpapi.LimitListener(httpLn, limits.MaxConns)); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve http: %w", err)
			}
			return nil
		}), func(error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = hs.Shutdown(ctx)
		})
	}

	reportCapacity(log, nofile, cfg.Relay)
	announce(log, cfg, path, srv, httpLn)
	notifier.ready()
	if actor, err := firstStopped(g.Run()); actor != "drain" {
		log.Error("stopped", "component", actor, "err", err)
		return 1
	}
	return 0
}

// announce logs where turnd listens, and with the demo config how to try it.
func announce(log *slog.Logger, cfg config.Config, path string, srv *server.Server, httpLn net.Listener) {
	args := []any{"version", version, "udp", addrStrings(srv.UDPAddrs()), "tcp", addrStrings(srv.TCPAddrs()),
		"tls", addrStrings(srv.TLSAddrs()), "realm", cfg.Realm, "drain_timeout", cfg.Drain.Timeout.String()}
	if httpLn != nil {
		args = append(args, "http", httpLn.Addr().String())
	}
	log.Info("turnd serving", args...)
	if path == "" {
		log.Info("running the embedded demo config (loopback only, user demo/demo); try it with coturn's tools: " +
			"turnutils_peer -L 127.0.0.1 -p 3480 & turnutils_uclient -t -u demo -w demo -e 127.0.0.1 -r 3480 -X -n 100 127.0.0.1; " +
			"then drain it: turnd drain --pid " + strconv.Itoa(os.Getpid()) + " --wait")
	}
}

func addrStrings(as []net.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
