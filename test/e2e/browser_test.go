package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTimeout bounds one browser test from launch to the last answer.
const browserTimeout = 20 * time.Second

// browserDrainBound is how soon the drain must start after SIGTERM while
// Chromium's processes share the machine's two cores with turnd; the
// 100 ms promise itself is held by the drain tests, which run no browser.
const browserDrainBound = time.Second

// browser is a headless Chromium showing callPage.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts Chromium on the call page. trustSPKI, if not empty, is
// the base64 SHA-256 of a certificate's public key Chromium accepts for
// turns: (a self-signed test certificate).
func newBrowser(t *testing.T, trustSPKI string) *browser {
	t.Helper()
	return launchBrowser(t, servePage(t), trustSPKI, nil)
}

// launchBrowser starts Chromium on page, through wrapper (a command that
// execs it, such as ip netns exec) if not empty.
func launchBrowser(t *testing.T, page, trustSPKI string, wrapper []string) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed: scripts/install-test-tools.sh installs Debian's chromium package")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Loopback candidates and TURN servers are otherwise left out.
		chromedp.Flag("allow-loopback-in-peer-connection", true),
	}
	if trustSPKI != "" {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", trustSPKI))
	}
	if len(wrapper) > 0 {
		wrapped, err := exec.LookPath(wrapper[0])
		if err != nil {
			t.Fatal(err)
		}
		// The DevTools pipe (extra files 3 and 4) passes through the wrapper's exec.
		opts = append(opts, chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.Args = append(append(append([]string{}, wrapper...), cmd.Path), cmd.Args[1:]...)
			cmd.Path = wrapped
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser) // first of the three: closes the browser, then its process
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("start chromium on the call page: %v", err)
	}
	return &browser{t: t, ctx: bctx}
}

// eval awaits a JavaScript expression (a promise) and decodes its value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("%s: decode %s: %v", expr, raw, err)
	}
}

// iceServer is an RTCIceServer.
type iceServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username"`
	Credential string   `json:"credential"`
}

// call runs a JavaScript function of the page with ice servers as its argument.
func call(fn string, servers ...iceServer) string {
	b, _ := json.Marshal(servers)
	return fmt.Sprintf("%s(%s)", fn, b)
}

// candidate is what the page reports of an ICE candidate.
type candidate struct {
	Type          string `json:"type"`
	Address       string `json:"address"`
	Port          int    `json:"port"`
	RelayProtocol string `json:"relayProtocol"`
	URL           string `json:"url"`
}

// candidatePair is the selected pair of the call.
type candidatePair struct {
	ID     string    `json:"id"`
	Local  candidate `json:"local"`
	Remote candidate `json:"remote"`
}

// burstResult counts the messages of one burst.
type burstResult struct {
	Sent   int `json:"sent"`
	Echoed int `json:"echoed"`
}

// iceError is an icecandidateerror event.
type iceError struct {
	Code int    `json:"code"`
	Text string `json:"text"`
	URL  string `json:"url"`
}

// gathered is what one peer gathered.
type gathered struct {
	Candidates []string   `json:"candidates"`
	Errors     []iceError `json:"errors"`
}

// startCall connects the page's two peers through server and checks that
// both ends of the selected pair are relay candidates.
func (b *browser) startCall(server iceServer) candidatePair {
	b.t.Helper()
	var p candidatePair
	b.eval(call("startCall", server), &p)
	if p.Local.Type != "relay" || p.Remote.Type != "relay" {
		b.t.Fatalf("selected pair %+v, want relay candidates at both ends", p)
	}
	return p
}

// burst sends n messages gap apart and returns how many came back.
func (b *browser) burst(n int, gap time.Duration) burstResult {
	b.t.Helper()
	var r burstResult
	b.eval(fmt.Sprintf("burst(%d, %d)", n, gap.Milliseconds()), &r)
	return r
}

// spkiHash is the value --ignore-certificate-errors-spki-list wants for a certificate.
func spkiHash(t *testing.T, der []byte) string {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}
