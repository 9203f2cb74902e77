package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/httpapi"
	"github.com/turnd/turnd/pkg/metrics"
	"github.com/turnd/turnd/pkg/pidfile"
	"github.com/turnd/turnd/pkg/server"
)

// daemon is turnd's components, built and bound, before any of them runs.
type daemon struct {
	cfg      config.Config
	log      *slog.Logger
	started  time.Time
	nofile   uint64
	reg      *prometheus.Registry
	table    *server.Table
	notifier *notifier
	// drainStarted is closed when the drain starts, for drain-progress.
	drainStarted chan struct{}
	machine      *drain.Machine
	metrics      *metrics.Metrics
	totals       *traffic.Counters
	srv          *server.Server
	httpLn       net.Listener  // nil: no HTTP listener
	pidfile      *pidfile.File // nil: none
	hd           *handoverd    // the hand-over sockets
	// warnings are problems turnd runs with, listed in /status.
	warnings []string
}

// build creates turnd's components and binds every socket, or takes them
// over from tk's predecessor (nil: none); on error nothing is left open.
// Nothing reads a socket before srv.Start.
func build(cfg config.Config, log *slog.Logger, logOut *logWriter, tk *takeOver) (*daemon, error) {
	d := &daemon{cfg: cfg, log: log, started: time.Now(), notifier: newNotifier(log), drainStarted: make(chan struct{})}
	// Before the first socket is bound, so every listener and relay socket
	// counts against the raised limit.
	d.nofile = raiseOpenFiles(log)
	d.reg = prometheus.NewRegistry()
	d.reg.MustRegister(goCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), logOut.collector())

	// The table exists before both the drain (which counts it and stops its
	// admissions) and the server (which serves from it), so neither needs
	// the other to be built first.
	d.table = server.NewTable(cfg)
	report := drainReporter(log, d.notifier, d.table.Expiry, d.drainStarted)
	// The server resolves alternate servers' names when a drain starts; a
	// change it has not read yet already says "look again".
	drainChanged := make(chan struct{}, 1)
	d.machine = drain.New(drain.Config{
		Delay:       cfg.Drain.Delay,
		Timeout:     cfg.Drain.Timeout,
		Allocations: d.table,
		OnChange: func(st drain.Status) {
			report(st)
			select {
			case drainChanged <- struct{}{}:
			default:
			}
		},
	})
	d.totals = &traffic.Counters{}
	var err error
	d.metrics, err = metrics.New(d.reg, metrics.Sources{Allocations: d.table.ByTransport, Drain: d.machine.Status, Traffic: d.totals,
		// The server comes next, before anything can scrape.
		KernelPassed: func() map[string]uint64 { return d.srv.KernelPassed() },
		Fleet:        func() (metrics.FleetStats, bool) { return fleetMetrics(d.srv) }})
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	d.srv, err = server.New(server.Options{
		Config: cfg, Logger: log, Observer: d.metrics, Table: d.table, Traffic: d.totals,
		DrainChanged: drainChanged, Inherit: tk.inherit(),
	})
	if err != nil {
		return nil, err
	}
	if len(cfg.HTTP.MetricsUsers) > 0 {
		if err := metrics.RegisterUsers(d.reg, userMetrics(d.srv.UserTraffic)); err != nil {
			_ = d.srv.Close()
			return nil, fmt.Errorf("register user metrics: %w", err)
		}
	}
	if err := d.bindRest(tk); err != nil {
		_ = d.srv.Close()
		return nil, err
	}
	return d, nil
}

// bindRest opens what comes after the TURN server: the HTTP listener and
// the hand-over sockets, the predecessor's where it passed them.
func (d *daemon) bindRest(tk *takeOver) error {
	// Problems turnd runs with but an operator should fix: logged now and
	// listed in /status, where a dashboard or `turnd status` shows them.
	if w := ephemeralOverlap(d.cfg.Relay, readEphemeralRange); w != "" {
		d.log.Warn(w)
		d.warnings = append(d.warnings, w)
	}
	d.warnTokenFile()
	if a := d.cfg.HTTP.Address; a != "" {
		ln, err := tk.httpListener(a)
		if err == nil && ln == nil {
			ln, err = net.Listen("tcp", a)
		}
		if err != nil {
			return fmt.Errorf("listen http %s: %w", a, err)
		}
		d.httpLn = ln
		d.srv.AddOwnAddress(ln.Addr())
	}
	d.hd = newHandoverd(d)
	var passed *os.File
	if tk != nil {
		passed = tk.file(tk.state.Socket)
	}
	if err := d.hd.listen(passed); err != nil {
		if d.httpLn != nil {
			_ = d.httpLn.Close()
		}
		return err
	}
	return nil
}

// writePIDFile writes the pidfile, if any: once this process serves, so a
// successor that fails never replaces its predecessor's.
func (d *daemon) writePIDFile() error {
	if d.cfg.PIDFile == "" {
		return nil
	}
	f, err := pidfile.Write(d.cfg.PIDFile, os.Getpid())
	if err != nil {
		return err
	}
	d.pidfile = f
	return nil
}

// abandon closes a successor that never served: the descriptors were
// duplicates, the allocations stay its predecessor's.
func (d *daemon) abandon() {
	d.hd.close()
	if d.httpLn != nil {
		_ = d.httpLn.Close()
	}
	_ = d.srv.Close()
}

// warnTokenFile logs what is wrong with the admin and credentials token files' permissions.
// It runs at start and on every reload: the file is read on every admin
// request, so a chmod needs no restart, and a reload is when it is looked
// at again. The path itself needs a restart, so d.cfg's is the running one.
func (d *daemon) warnTokenFile() {
	if f := d.cfg.HTTP.AdminTokenFile; f != "" {
		if w := httpapi.TokenFileWarning(f); w != "" {
			d.log.Warn(w)
		}
	}
	if f := d.cfg.Fleet.Credentials.TokenFile; f != "" {
		if w := httpapi.CredentialsTokenFileWarning(f); w != "" {
			d.log.Warn(w)
		}
	}
}
