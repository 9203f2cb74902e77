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

	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/fleet"
	"github.com/turnd/turnd/pkg/httpapi"
	"github.com/turnd/turnd/pkg/server"
)

// serve runs turnd until its drain ends; the exit code is 0 for any stop
// the operator asked for, 1 when turnd could not start or a component failed.
func serve(path string, takeOverFlag bool, _, stderr io.Writer) int {
	// First, before anything can write a log line: a closed stderr must not
	// kill a relay that carries live calls.
	ignoreSIGPIPE()
	fleet.SilenceDriver() // the fleet logs Redis's outages through turnd's logger, once each
	cfg := config.Embedded()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			fmt.Fprintln(stderr, err)
			refusePredecessor(err)
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
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Handover.Timeout)
	defer cancel()
	tk, err := startTakeOver(ctx, cfg, takeOverFlag, log)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	d, err := build(cfg, log, logOut, tk)
	tk.closeFiles() // what the server kept, it duplicated
	if err != nil {
		tk.fail(err)
		log.Error("start", "err", err)
		return 1
	}
	if tk != nil {
		if err := tk.serving(cfg.Handover.Timeout); err != nil {
			// The predecessor serves on: it never stopped for good.
			log.Error("take over: the predecessor did not let go; it serves on", "err", err)
			d.abandon()
			return 1
		}
	}
	d.srv.Start()
	if err := d.writePIDFile(); err != nil {
		if tk == nil {
			log.Error("start", "err", err)
			_ = d.srv.Close()
			return 1
		}
		// The predecessor has let go: stopping now would end every call.
		log.Error("took over, but the pidfile could not be written", "err", err)
	}
	defer func() {
		if err := d.pidfile.Remove(); err != nil {
			log.Warn("stop", "err", err)
		}
	}()
	if tk != nil {
		log.Info("took over", "allocations", d.table.Count())
	}
	reportCapacity(log, d.nofile, cfg.Relay)
	announce(log, cfg, path, d.srv, d.httpLn)
	d.notifier.ready()
	if actor, err := d.run(sigs, func() { reload(path, d.srv, log, level); d.warnTokenFile() }); actor != "drain" {
		log.Error("stopped", "component", actor, "err", err)
		return 1
	}
	return 0
}

// run runs the components as one actor group until the first returns, and
// says which one that was and its error; only the drain ending is a clean stop.
func (d *daemon) run(sigs osSignals, reloadFile func()) (actor string, err error) {
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
		watchReloads(sigs.reload, reloadStop, reloadFile)
		return nil
	}), func(error) { close(reloadStop); signal.Stop(sigs.reload) })

	// The drain ends the process. Every other actor is interrupted only after
	// it returns: the TURN sockets and /readyz must stay up for the whole drain.
	drainCtx, cancelDrain := context.WithCancel(context.Background())
	g.Add(named("drain", func() error {
		d.drain(drainCtx, signals)
		d.waitAfterHandover(drainCtx, signals)
		return nil
	}), func(error) { cancelDrain() })

	// Drain progress: a log line every drainLogInterval while draining.
	progressStop := make(chan struct{})
	g.Add(named("drain-progress", func() error {
		ticker := time.NewTicker(drainLogInterval)
		defer ticker.Stop()
		drainProgress{log: d.log, status: d.machine.Status, count: d.table.Count, expiry: d.table.Expiry, now: time.Now}.
			run(d.drainStarted, progressStop, ticker.C)
		return nil
	}), func(error) { close(progressStop) })

	// Hand-over: upgrade requests and successors; once one serves, what
	// stayed here (TLS clients) drains as on SIGUSR1.
	if d.hd != nil {
		hoStop := make(chan struct{})
		g.Add(named("handover", func() error {
			go func() {
				select {
				case <-d.hd.committed:
					select {
					case signals <- drain.Drain:
					case <-hoStop:
					}
				case <-hoStop:
				}
			}()
			d.hd.run(hoStop)
			return nil
		}), func(error) { close(hoStop) })
	}

	// TURN: closing it ends every allocation, so it runs until the drain is
	// over, unless a socket it serves dies first.
	g.Add(named("turn", func() error {
		select {
		case err := <-d.srv.Failed():
			return err
		case <-d.srv.Done():
			return errors.New("turn server stopped")
		}
	}), func(error) {
		if err := d.srv.Close(); err != nil {
			d.log.Warn("close", "err", err)
		}
	})

	// HTTP: probes and metrics answer throughout the drain (readiness 503).
	if d.httpLn != nil {
		d.addHTTP(&g)
	}
	return firstStopped(g.Run())
}

// drain runs the drain to its end and logs how it went.
func (d *daemon) drain(ctx context.Context, signals <-chan drain.Signal) {
	res := d.machine.Run(ctx, signals)
	if res.Reason == drain.DeadlineExpired && res.Remaining > 0 {
		d.metrics.ForceClosed(res.Remaining)
		d.srv.SetShutdownReason(server.EndDrainDeadline)
		d.log.Warn("drain deadline passed: closing remaining allocations", "allocations", res.Remaining)
	}
	d.log.Info("drain complete", "reason", res.Reason.String(), "trigger", res.Trigger.String(),
		"allocations_at_start", res.AtStart, "drained", max(0, res.AtStart-res.Remaining),
		"force_closed", res.Remaining, "duration", res.Duration.Round(time.Millisecond))
}

// addHTTP adds the probes, metrics and /status server to g.
func (d *daemon) addHTTP(g *oklog.Group) {
	limits := httpapi.DefaultLimits()
	refused := loglimit.New(loglimit.PerSecond, nil) // any HTTP client can cause the line
	hs := httpapi.NewServer(httpapi.New(httpapi.Options{
		Version: version, Started: d.started, Allocations: d.table.ByTransport, Expiry: d.table.Expiry,
		Traffic: d.totals, Drain: d.machine.Status, Gatherer: d.reg, Warnings: d.warnings,
		Offload: offloadStatus(d.srv.Offload()),
		Fleet:   fleetAPI(d.srv, d.cfg.Fleet.Credentials.TokenFile),
		Admin: httpapi.Admin{
			TokenFile: d.cfg.HTTP.AdminTokenFile, Sessions: d.srv.Sessions, Usage: d.srv.Usage, Disconnect: d.srv.Disconnect,
			Problem: func(err error) {
				// A line the level drops spends nothing of the limit.
				if !d.log.Enabled(context.Background(), slog.LevelWarn) {
					return
				}
				if held, ok := refused.Allow(); ok {
					d.log.Warn("admin request refused", loglimit.Args(held, "err", err)...)
				}
			},
		},
	}), limits)
	httpStop := make(chan struct{})
	g.Add(named("http", func() error {
		if d.hd != nil {
			// The listener passes to the successor; this process answers
			// no HTTP after the hand-over, and serves on until its drain ends.
			go func() {
				select {
				case <-d.hd.committed:
					_ = hs.Close()
				case <-httpStop:
				}
			}()
		}
		if err := hs.Serve(httpapi.LimitListener(d.httpLn, limits.MaxConns)); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve http: %w", err)
		}
		if d.handedOver() {
			<-httpStop
		}
		return nil
	}), func(error) {
		close(httpStop)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
}

// waitAfterHandover keeps a process that handed over and drained alive
// until a stop signal when handover.after is wait: a Kubernetes container
// that exits is restarted.
func (d *daemon) waitAfterHandover(ctx context.Context, signals <-chan drain.Signal) {
	if !d.handedOver() || d.cfg.Handover.After != "wait" {
		return
	}
	d.log.Info("handed over and drained; waiting for SIGTERM (handover.after: wait)")
	select {
	case <-signals:
	case <-ctx.Done():
	}
}

// handedOver reports whether a successor serves what this process served.
func (d *daemon) handedOver() bool {
	if d.hd == nil {
		return false
	}
	select {
	case <-d.hd.committed:
		return true
	default:
		return false
	}
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

// offloadStatus is the kernel path as /status shows it.
func offloadStatus(o server.Offload) httpapi.Offload {
	return httpapi.Offload{Mode: o.Mode, Interfaces: o.Interfaces, Reason: o.Reason, Gaps: o.Gaps}
}
