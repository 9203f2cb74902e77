package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/turnd/turnd/internal/testcert"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/metrics"
	"github.com/turnd/turnd/pkg/server"
)

// notify delivers sig on ch as os/signal does: never blocking, dropped when
// the channel is full.
func notify(ch chan os.Signal, sig os.Signal) {
	select {
	case ch <- sig:
	default:
	}
}

// TestSIGTERMBehindAReloadBurst sends 40 SIGHUPs while every reload is slow,
// then SIGTERM: the drain request must come through while the first reload
// still runs, and the burst must coalesce into one more reload.
func TestSIGTERMBehindAReloadBurst(t *testing.T) {
	sigs := osSignals{stop: make(chan os.Signal, 8), reload: make(chan os.Signal, 1)}
	out := make(chan drain.Signal, 4)
	stop := make(chan struct{})
	release := make(chan struct{})
	var reloads atomic.Int32
	started := make(chan struct{}, 64)
	reloaded := make(chan struct{}, 64)
	done := make(chan struct{}, 2)
	go func() { watchSignals(sigs.stop, out, stop); done <- struct{}{} }()
	go func() {
		watchReloads(sigs.reload, stop, func() {
			reloads.Add(1)
			started <- struct{}{}
			<-release
			reloaded <- struct{}{}
		})
		done <- struct{}{}
	}()

	notify(sigs.reload, syscall.SIGHUP)
	wait(t, started, "the first reload")
	for range 40 {
		notify(sigs.reload, syscall.SIGHUP)
	}
	notify(sigs.stop, syscall.SIGTERM)
	select {
	case got := <-out:
		if got != drain.Terminate {
			t.Fatalf("drain request %v, want Terminate", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM behind a burst of SIGHUPs started no drain")
	}

	close(release)
	wait(t, reloaded, "the first reload to end")
	wait(t, reloaded, "the burst's one reload") // coalesced
	if len(sigs.reload) != 0 {
		t.Fatalf("%d reload signals still queued", len(sigs.reload))
	}
	close(stop)
	wait(t, done, "watchSignals to return")
	wait(t, done, "watchReloads to return")
	if n := reloads.Load(); n != 2 {
		t.Fatalf("40 SIGHUPs during a reload ran %d reloads, want 2 (one, then the burst coalesced)", n)
	}
}

// TestFailedReloadCountedOnce reloads twice with a config the server refuses
// (a TLS certificate that does not load) and once with a file that does not
// parse: each is one failure in turnd_config_reloads_total.
func TestFailedReloadCountedOnce(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testcert.New(t, 1).WriteFiles(t, dir)
	cfg := config.Default()
	cfg.Listen.UDP, cfg.Listen.TCP, cfg.Listen.TLS = []string{"127.0.0.1:0"}, nil, []string{"127.0.0.1:0"}
	cfg.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile}
	cfg.HTTP.Address = ""
	cfg.Auth.Users = map[string]string{"demo": "demo"}

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	path := filepath.Join(dir, "turnd.yaml")
	broken := cfg
	broken.TLS.CertFile = filepath.Join(dir, "missing.crt")
	writeYAML(t, path, broken)
	log := slog.New(slog.DiscardHandler)
	var level slog.LevelVar
	reload(path, srv, log, &level)
	if got := reloadFailures(t, reg); got != 1 {
		t.Fatalf("a reload the server refused counted %v failures, want 1", got)
	}
	if err := os.WriteFile(path, []byte("realm: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload(path, srv, log, &level)
	if got := reloadFailures(t, reg); got != 2 {
		t.Fatalf("after an unparsable file: %v failures, want 2", got)
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func writeYAML(t *testing.T, path string, cfg config.Config) {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// reloadFailures reads turnd_config_reloads_total{result="failure"} from reg.
func reloadFailures(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "turnd_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "failure" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
