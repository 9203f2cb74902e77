package e2e

import (
	"bytes"
	"github.com/turnd/turnd/internal/testturn"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runTurnd runs the binary to completion and returns its exit code and output.
func runTurnd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(turndBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		}
		return 0, out.String()
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("turnd %v did not exit:\n%s", args, out.String())
		return 0, ""
	}
}

func TestCheckConfigListsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "realm: \"\"\nrelay: {min_port: 60000, max_port: 50000}\ndrain: {timeout: -1s}\nauth: {}\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runTurnd(t, "check-config", "--config", path)
	if code == 0 {
		t.Fatalf("check-config accepted a bad file:\n%s", out)
	}
	for _, want := range []string{"realm:", "relay.min_port", "drain.timeout", "auth"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	good := writeConfig(t, testConfig())
	if code, out := runTurnd(t, "check-config", "--config", good); code != 0 {
		t.Fatalf("check-config refused a good file (%d):\n%s", code, out)
	}
	if code, _ := runTurnd(t, "check-config"); code == 0 {
		t.Fatal("check-config without --config succeeded")
	}
	noCert := testConfig()
	noCert.Listen.TLS = []string{"127.0.0.1:0"}
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "/nonexistent/tls.crt", "/nonexistent/tls.key"
	if code, out := runTurnd(t, "check-config", "--config", writeConfig(t, noCert)); code == 0 || !strings.Contains(out, "tls.crt") {
		t.Fatalf("check-config accepted a missing certificate (%d):\n%s", code, out)
	}
}

func TestUnknownKeyIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(path, []byte("realm: x\nlisten: {udpp: []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runTurnd(t, "--config", path)
	if code == 0 || !strings.Contains(out, "udpp") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestStartupFailuresAreOneLine: an address in use and a missing certificate
// each stop turnd with a non-zero exit and one error line.
func TestStartupFailuresAreOneLine(t *testing.T) {
	busy, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	inUse := testConfig()
	inUse.Listen.UDP = []string{busy.LocalAddr().String()}
	inUse.Listen.UDPSockets = 1

	noCert := testConfig()
	noCert.Listen.TLS = []string{"127.0.0.1:0"}
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "/nonexistent/tls.crt", "/nonexistent/tls.key"

	for name, tc := range map[string]struct {
		path string
		want string
	}{
		"address in use":   {writeConfig(t, inUse), "address already in use"},
		"missing tls cert": {writeConfig(t, noCert), "tls.crt"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := runTurnd(t, "--config", tc.path)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code == 0 || len(lines) != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want non-zero and one line containing %q:\n%s", code, tc.want, out)
			}
		})
	}
}

func TestVersionAndDefaultConfig(t *testing.T) {
	if code, out := runTurnd(t, "version"); code != 0 || !strings.HasPrefix(out, "turnd ") {
		t.Fatalf("version: %d %q", code, out)
	}
	code, out := runTurnd(t, "default-config")
	if code != 0 || !strings.Contains(out, "demo: demo") {
		t.Fatalf("default-config: %d\n%s", code, out)
	}
	path := filepath.Join(t.TempDir(), "default.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runTurnd(t, "check-config", "--config", path); code != 0 {
		t.Fatalf("the printed default config does not pass check-config:\n%s", out)
	}
}

// TestIPv6 allocates over an IPv6 listener and relays to an IPv6 peer.
func TestIPv6(t *testing.T) {
	cfg := testConfig()
	cfg.Listen.UDP = []string{"[::1]:0"}
	cfg.Listen.TCP = []string{"[::1]:0"}
	srv := start(t, cfg)

	peerConn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer peerConn.Close()
	go func() { // echo peer, ends when the socket closes
		buf := make([]byte, 2048)
		for {
			n, from, err := peerConn.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = peerConn.WriteTo(buf[:n], from)
		}
	}()
	for _, network := range []string{"udp", "tcp"} {
		addr := srv.UDP
		if network == "tcp" {
			addr = srv.TCP
		}
		c := testturn.Dial(t, network, addr, "demo", "demo")
		relay := c.MustAllocate()
		if relay.IP.To4() != nil {
			t.Fatalf("%s: relayed address %v is not IPv6", network, relay)
		}
		peer := peerConn.LocalAddr().(*net.UDPAddr)
		if code := c.Permit(peer); code != 0 {
			t.Fatalf("%s: permission: %d", network, code)
		}
		if !c.Echo(peer, "v6 "+network) {
			t.Fatalf("%s: no echo over IPv6", network)
		}
	}
}

// TestCheckConfigOnePass: unknown keys, wrong types and invalid values are
// reported by one run, each with its line.
func TestCheckConfigOnePass(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "realm: x\nlisten: {udpp: []}\nrelay: {min_port: low, address: nowhere}\nauth: {users: {a: b}}\nhttp: {address: \"1.2.3.4\"}\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runTurnd(t, "check-config", "--config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{`line 2: unknown key "udpp" in listen`, "line 3: relay.min_port: cannot unmarshal",
		`line 3: relay.address: "nowhere"`, "line 5: http.address:"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
}

// TestCoturnConfigGetsAHint: a coturn turnserver.conf given to --config, or
// coturn's -c flag, is answered with the command that converts it.
func TestCoturnConfigGetsAHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turnserver.conf")
	if err := os.WriteFile(path, []byte("listening-port=3478\nno-dtls\nrealm=example.org\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--config", path}, {"check-config", "--config", path}, {"-c", path}} {
		code, out := runTurnd(t, args...)
		if code == 0 || !strings.Contains(out, "turnd import-coturn "+path) {
			t.Errorf("turnd %q: exit %d, want a hint naming turnd import-coturn:\n%s", args, code, out)
		}
	}
}

// TestHelpExitCodes: help is asked for, so it goes to stdout and exits 0;
// an unknown command exits 2 naming the nearest one.
func TestHelpExitCodes(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out := runTurnd(t, args...)
		if code != 0 || !strings.Contains(out, "import-coturn") || !strings.Contains(out, "check-config") {
			t.Errorf("turnd %q: exit %d:\n%s", args, code, out)
		}
	}
	if code, out := runTurnd(t, "--version"); code != 0 || !strings.HasPrefix(out, "turnd ") {
		t.Errorf("turnd --version: exit %d:\n%s", code, out)
	}
	if code, out := runTurnd(t, "status", "--help"); code != 0 || !strings.Contains(out, "-json") {
		t.Errorf("turnd status --help: exit %d:\n%s", code, out)
	}
	if code, out := runTurnd(t, "stauts"); code != 2 || !strings.Contains(out, `did you mean "status"`) {
		t.Errorf("turnd stauts: exit %d:\n%s", code, out)
	}
}
