package deploytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// turndBin is the turnd binary named by $TURND_BIN. These tests skip only
// when it is unset (the Makefile sets it after building turnd); a set but
// broken path fails.
func turndBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TURND_BIN")
	if bin == "" {
		t.Skip("TURND_BIN is not set: build turnd and point TURND_BIN at it to check the rendered configs")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("TURND_BIN: %v", err)
	}
	return bin
}

// checkConfig runs `turnd check-config` on content with the environment a pod
// gives turnd, after pointing the TLS paths (mount points in the pod) at a
// throw-away certificate.
func checkConfig(t *testing.T, bin, name string, content []byte, nodeIP string) {
	t.Helper()
	dir := t.TempDir()
	text := string(content)
	if strings.Contains(text, "/etc/turnd/tls/") {
		writeCert(t, dir)
		text = strings.ReplaceAll(text, "/etc/turnd/tls/", dir+"/")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TURND_NODE_IP=" + nodeIP, "TURND_NODE_NAME=node-a"}
	stdout, stderr, err := run(env, bin, "check-config", "--config", path)
	if err != nil {
		hint := ""
		if strings.Contains(stderr, `"${TURND_NODE_IP}`) {
			hint = "\nturnd did not expand ${TURND_NODE_IP}: the chart needs turnd to expand ${NAME} from the " +
				"environment in address fields (deploy/helm/turnd/README.md, \"Node addresses\")"
		}
		t.Errorf("turnd check-config %s: %v%s\n%s%s\n--- config:\n%s", name, err, hint, stdout, stderr, text)
	}
}

// TestRenderedConfigsPassCheckConfig feeds every turnd.yaml the chart renders
// to turnd itself, the strictest judge of its own format.
func TestRenderedConfigsPassCheckConfig(t *testing.T) {
	bin := turndBin(t)
	for _, tc := range chartCases {
		t.Run(strings.TrimSuffix(tc.values, ".values.yaml"), func(t *testing.T) {
			r := render(t, "-f", valuesFile(tc.values))
			nodeIP := "192.0.2.1"
			if strings.HasPrefix(tc.values, "ipv6") {
				nodeIP = "2001:db8::1"
			}
			if r.secret == nil {
				// existingSecret: check the example of what the user provides.
				data, err := os.ReadFile(valuesFile(strings.TrimSuffix(tc.values, ".values.yaml") + ".turnd.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				checkConfig(t, bin, "turnd.yaml", data, nodeIP)
				return
			}
			names, files := r.configFiles(t)
			for _, name := range names {
				checkConfig(t, bin, name, files[name], nodeIP)
			}
		})
	}
}

// TestCheckConfigRefusesBrokenRender guards the test above: a config turnd
// must refuse is refused, so a check-config that accepted anything would show.
func TestCheckConfigRefusesBrokenRender(t *testing.T) {
	bin := turndBin(t)
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	if err := os.WriteFile(path, []byte("listen: {udp: [\"${TURND_NODE_IP}:3478\"]}\nauth: {secrets: [x]}\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := run([]string{"TURND_NODE_IP=192.0.2.1"}, bin, "check-config", "--config", path)
	if !exitedNonZero(err) {
		t.Errorf("check-config accepted an unknown key (err %v)", err)
	}
}

func TestSystemdExampleConfigPassesCheckConfig(t *testing.T) {
	bin := turndBin(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "turnd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, bin, "turnd.yaml", data, "192.0.2.1")
}

// writeCert writes a self-signed tls.crt and tls.key into dir, the file
// names of a kubernetes.io/tls Secret.
func writeCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "turn.example.org"},
		DNSNames:     []string{"turn.example.org"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
