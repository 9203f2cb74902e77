package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testcert"
	"github.com/turnd/turnd/internal/testturn"
)

// Each burst: 100 messages 10 ms apart, about a second of a call.
const (
	burstMessages = 100
	burstGap      = 10 * time.Millisecond
)

// demoServer is an RTCIceServer for the test user at url.
func demoServer(url string) iceServer {
	return iceServer{URLs: []string{url}, Username: "demo", Credential: "demo"}
}

// TestBrowserRelayCall: headless Chromium makes a relay-only call through
// turnd over turn: UDP, turn: TCP and turns: (a self-signed certificate
// trusted by its public key hash) and loses no message of its unreliable
// data channel.
func TestBrowserRelayCall(t *testing.T) {
	cfg := testConfig()
	cert := testcert.New(t, 1)
	cfg.Listen.TLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = cert.WriteFiles(t, t.TempDir())
	srv := start(t, cfg)
	b := newBrowser(t, spkiHash(t, cert.DER))

	for _, tc := range []struct{ url, relayProtocol string }{
		{"turn:" + srv.UDP + "?transport=udp", "udp"},
		{"turn:" + srv.TCP + "?transport=tcp", "tcp"},
		{"turns:" + srv.TLS + "?transport=tcp", "tls"},
	} {
		p := b.startCall(demoServer(tc.url))
		if p.Local.RelayProtocol != tc.relayProtocol {
			t.Errorf("%s: relay candidate reached turnd over %q, want %q", tc.url, p.Local.RelayProtocol, tc.relayProtocol)
		}
		r := b.burst(burstMessages, burstGap)
		t.Logf("%s: pair %s:%d <-> %s:%d, %d of %d messages echoed", tc.url, p.Local.Address, p.Local.Port,
			p.Remote.Address, p.Remote.Port, r.Echoed, r.Sent)
		if r.Sent != burstMessages || r.Echoed != r.Sent {
			t.Errorf("%s: %d of %d messages echoed, want every one", tc.url, r.Echoed, r.Sent)
		}
		var ok bool
		b.eval("hangUp()", &ok)
	}
	if got := srv.metric(`turnd_allocations_created_total{transport="tls"}`); got < 2 {
		t.Errorf("TLS allocations created = %v, want the call's 2", got)
	}
}

// TestBrowserCallAcrossDrain: a browser call keeps its relay pair and loses
// no message across a SIGTERM, and turnd exits within a second of the
// hang-up (Chromium releases its allocations when the call ends).
func TestBrowserCallAcrossDrain(t *testing.T) {
	srv := start(t, testConfig())
	b := newBrowser(t, "")
	before := b.startCall(demoServer("turn:" + srv.UDP + "?transport=udp"))
	if r := b.burst(burstMessages, burstGap); r.Echoed != r.Sent {
		t.Fatalf("before the drain: %d of %d messages echoed", r.Echoed, r.Sent)
	}

	// The burst is under way, a third of it sent, when the signal arrives.
	var started bool
	b.eval("(window.running = burst(300, 10), true)", &started)
	var sent int
	b.eval(fmt.Sprintf("sentReaches(%d)", burstMessages+100), &sent)
	drainSignalledWithin(t, srv, syscall.SIGTERM, browserDrainBound)
	var r burstResult
	b.eval("window.running", &r)
	t.Logf("across SIGTERM: %d of %d messages echoed", r.Echoed, r.Sent)
	if r.Sent != 300 || r.Echoed != r.Sent {
		t.Errorf("across SIGTERM: %d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	var after candidatePair
	b.eval("pair()", &after)
	if after != before {
		t.Errorf("the call changed its pair during the drain:\nbefore %+v\nafter  %+v", before, after)
	}
	if srv.exited() {
		t.Fatal("turnd exited while the call was live")
	}

	var ok bool
	b.eval("hangUp()", &ok)
	hungUp := time.Now()
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	d := time.Since(hungUp)
	t.Logf("turnd exited %v after the hang-up", d.Round(time.Millisecond))
	if d > time.Second {
		t.Errorf("turnd exited %v after the hang-up, want within 1s", d)
	}
	srv.waitLog("drain complete", time.Second)
}

// TestBrowserDrainRefusal: a new call during a drain without alternates
// gets no relay, and the browser reports 486. Chromium puts a text of its own
// in errorText for every Allocate error ("TURN allocate error.", whatever the
// server's reason phrase), so the phrase turnd sends with the same refusal is
// checked on the wire.
func TestBrowserDrainRefusal(t *testing.T) {
	srv := start(t, testConfig())
	holder := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	holder.MustAllocate() // keeps the drain going
	b := newBrowser(t, "")
	drainSignalledWithin(t, srv, syscall.SIGTERM, browserDrainBound)

	var g gathered
	b.eval(call("gather", demoServer("turn:"+srv.UDP+"?transport=udp")), &g)
	t.Logf("gathered %v, errors %+v", g.Candidates, g.Errors)
	if len(g.Candidates) != 0 {
		t.Errorf("relay candidates %v during the drain, want none", g.Candidates)
	}
	if len(g.Errors) == 0 {
		t.Fatal("no icecandidateerror")
	}
	for _, e := range g.Errors {
		if e.Code != 486 || e.Text == "" || !strings.Contains(e.URL, srv.UDP) {
			t.Errorf("icecandidateerror %+v, want 486 with a text from %s", e, srv.UDP)
		}
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="draining"}`); got != float64(len(g.Errors)) {
		t.Errorf("refused while draining = %v, want one per browser error (%d)", got, len(g.Errors))
	}

	resp := testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(resp); err != nil || ec.Code != 486 || string(ec.Reason) != "Allocation Quota Reached" {
		t.Errorf("the same refusal on the wire: %v, want 486 \"Allocation Quota Reached\"", resp)
	}
}
