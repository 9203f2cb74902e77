package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/config"
)

// coturnTestdata holds realistic coturn configs and their golden
// conversions (pkg/coturnconf's tests own them; -update rewrites them).
const coturnTestdata = "../../pkg/coturnconf/testdata"

// runSplit runs the binary to completion (bounded) and returns its exit
// code, stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(turndBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, stdout.String(), stderr.String()
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("turnd %v did not exit:\n%s%s", args, stdout.String(), stderr.String())
		return 0, "", ""
	}
}

// importArgs is the import-coturn command line for a testdata case:
// NAME.conf, and NAME.args (one argument per line) after "--".
func importArgs(t *testing.T, name string) []string {
	t.Helper()
	args := []string{"import-coturn"}
	conf := filepath.Join(coturnTestdata, name+".conf")
	if _, err := os.Stat(conf); err == nil {
		args = append(args, conf)
	}
	if data, err := os.ReadFile(filepath.Join(coturnTestdata, name+".args")); err == nil {
		args = append(args, "--")
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				args = append(args, l)
			}
		}
	}
	return args
}

// TestImportCoturnOutputPassesCheckConfig runs `turnd import-coturn` on every
// testdata config: stdout is the golden YAML and `turnd check-config`
// accepts it; stderr lists the golden findings; a config turnd cannot run
// as it is exits 1 and writes nothing to stdout.
func TestImportCoturnOutputPassesCheckConfig(t *testing.T) {
	confs, _ := filepath.Glob(filepath.Join(coturnTestdata, "*.conf"))
	argsOnly, _ := filepath.Glob(filepath.Join(coturnTestdata, "*.args"))
	names := map[string]bool{}
	for _, f := range append(confs, argsOnly...) {
		names[strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))] = true
	}
	if len(names) < 5 {
		t.Fatalf("only %d coturn configs in %s", len(names), coturnTestdata)
	}
	for name := range names {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runSplit(t, importArgs(t, name)...)
			findings, err := os.ReadFile(filepath.Join(coturnTestdata, name+".findings"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(stderr, string(findings)) {
				t.Errorf("stderr does not start with the golden findings:\n%s", stderr)
			}
			if wantErr, err := os.ReadFile(filepath.Join(coturnTestdata, name+".error")); err == nil {
				if code != 1 || stdout != "" || !strings.Contains(stderr, strings.TrimSpace(string(wantErr))) {
					t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, no output and %s", code, stdout, stderr, wantErr)
				}
				return
			}
			want, err := os.ReadFile(filepath.Join(coturnTestdata, name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 || stdout != string(want) {
				t.Fatalf("exit %d; stdout differs from %s.yaml:\n%s\nstderr:\n%s", code, name, stdout, stderr)
			}
			// check-config loads the certificate too; on the target host the
			// coturn paths exist, here a generated pair stands in for them.
			cfg, err := config.Parse([]byte(stdout))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TLS.CertFile != "" {
				cfg.TLS.CertFile, cfg.TLS.KeyFile = selfSigned(t)
			}
			path := writeConfig(t, cfg)
			if code, out := runTurnd(t, "check-config", "--config", path); code != 0 {
				t.Fatalf("check-config refused the converted config (%d):\n%s", code, out)
			}
		})
	}
}

// TestImportCoturnThenRelay converts coturn configs, moves their listeners
// and relay to loopback (ports the kernel picks) and allows loopback peers
// for the echo peer, starts turnd on them and relays with turnutils_uclient
// using the credentials the coturn file held: a static user, and a TURN REST
// secret. Every message must come back.
func TestImportCoturnThenRelay(t *testing.T) {
	tests := []struct {
		name  string
		creds func(t *testing.T, conf string) []string
	}{
		{"classic", func(t *testing.T, conf string) []string {
			m := regexp.MustCompile(`(?m)^user=alice:(.+)$`).FindStringSubmatch(conf)
			if m == nil {
				t.Fatal("classic.conf has no user=alice:")
			}
			return []string{"-u", "alice", "-w", m[1]}
		}},
		{"wire", func(t *testing.T, conf string) []string {
			m := regexp.MustCompile(`(?m)^static-auth-secret=(.+)$`).FindStringSubmatch(conf)
			if m == nil {
				t.Fatal("wire.conf has no static-auth-secret=")
			}
			return []string{"-u", "wire-user", "-W", m[1]}
		}},
	}
	peer := strconv.Itoa(startPeer(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := os.ReadFile(filepath.Join(coturnTestdata, tt.name+".conf"))
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runSplit(t, importArgs(t, tt.name)...)
			if code != 0 {
				t.Fatalf("import-coturn exit %d:\n%s", code, stderr)
			}
			cfg, err := config.Parse([]byte(stdout))
			if err != nil {
				t.Fatal(err)
			}
			onLoopback(&cfg)
			srv := start(t, cfg)
			const m, n = 2, 50
			args := append(tt.creds(t, string(conf)), "-e", "127.0.0.1", "-r", peer, "-X",
				"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "100")
			requireZeroLoss(t, uclient(t, uclientTimeout, srv.UDP, args...), m*n)
		})
	}
}

// onLoopback moves a converted config onto this machine's loopback: kernel-
// chosen listener ports, relay and HTTP on 127.0.0.1, no TLS (the coturn
// file's certificate paths do not exist here), no pidfile, and loopback
// peers allowed, also past a denied-peer-ip list that covers 127/8.
// Credentials, realm, port range, quotas and the rest stay as converted.
func onLoopback(cfg *config.Config) {
	cfg.Listen = config.Listen{UDP: []string{"127.0.0.1:0"}, TCP: []string{"127.0.0.1:0"}}
	cfg.TLS = config.TLS{}
	cfg.Relay.Address, cfg.Relay.ExternalAddress = "127.0.0.1", ""
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.PIDFile = ""
	cfg.Peers.AllowLoopback = true
	cfg.Peers.Allowed = append(cfg.Peers.Allowed, "127.0.0.1")
	cfg.Log = config.Log{Level: "debug", Format: "json"}
}
