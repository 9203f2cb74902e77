package e2e

import (
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeKeepsTLSInTheOldProcess: a TLS client's session keys live in
// the old process, so its connection and allocation stay there and keep
// relaying (its numbered stream loses and repeats nothing) while a new TLS
// connection is served by the new process; once the TLS client releases
// its allocation, the old process exits 0.
func TestUpgradeKeepsTLSInTheOldProcess(t *testing.T) {
	cfg := upgradeConfig(t)
	clientTLS := withFixedTLS(t, &cfg)
	l := startUpgradable(t, writeConfig(t, cfg))
	peer := newCountingPeer(t)
	c, _, local := pionDial(t, "tls", l.log.TLS, clientTLS)
	s, pc, relay := relayStream(t, c, peer)
	s.waitEchoes(t, streamRate/2, 10*time.Second)

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 0, 1)
	s.waitEchoes(t, s.echoed()+streamRate, 10*time.Second) // a second more after the switch
	if old.exited() {
		t.Fatal("the old turnd exited while it held a TLS client")
	}
	requireOwner(t, "the TLS client's connection", "tcp", l.log.TLS, local, old, old, next)
	requireOwner(t, "the TLS client's relayed socket", "udp", relay.String(), "", old, old, next)
	requireOwner(t, "the TLS listener", "tcp", l.log.TLS, "0.0.0.0:0", next, old, next)
	requireOwner(t, "the HTTP listener", "tcp", l.log.HTTP, "0.0.0.0:0", next, old, next)

	// A new TLS connection is the new process's.
	fresh := testturn.DialTLS(t, l.log.TLS, clientTLS, "demo", "demo")
	freshRelay := fresh.MustAllocate()
	if code := fresh.Permit(peer.addr()); code != 0 {
		t.Fatalf("permission on the new process: %d", code)
	}
	if !fresh.Echo(peer.addr(), "a TLS client of the new process") {
		t.Fatal("no echo for a TLS client of the new process")
	}
	requireOwner(t, "the new TLS client's connection", "tcp", l.log.TLS, fresh.LocalAddr().String(), next, old, next)
	requireOwner(t, "the new TLS client's relayed socket", "udp", freshRelay.String(), "", next, old, next)

	res := s.finish(t)
	res.requirePerfect(t, "TLS stream served by the old process")
	if old.exited() {
		t.Fatal("the old turnd exited while it held a TLS client")
	}
	released := l.log.logCount()
	if err := pc.Close(); err != nil { // Refresh(0), to the old process over its TLS connection
		t.Fatalf("close: %v", err)
	}
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d once its TLS client left, want 0", code)
	}
	rec, _ := l.log.waitLogFrom(released, "allocation deleted", time.Second)
	if rec["relay"] != relay.String() || rec["reason"] != "released" || rec["transport"] != "tls" {
		t.Errorf("usage record %v, want the TLS allocation on %v released", rec, relay)
	}
	// The new process serves on alone.
	if !fresh.Echo(peer.addr(), "the new process after the old one left") {
		t.Fatal("the new process's TLS client stopped relaying when the old process exited")
	}
}

// TestSecondUpgradeWhileTLSDrains: the successor of an upgrade that left a
// TLS client in the first process is itself upgraded; the first process
// still serves its TLS client (whose stream loses nothing), a UDP stream
// crosses both upgrades with nothing lost, and the first process exits
// once its TLS client leaves.
func TestSecondUpgradeWhileTLSDrains(t *testing.T) {
	cfg := upgradeConfig(t)
	clientTLS := withFixedTLS(t, &cfg)
	l := startUpgradable(t, writeConfig(t, cfg))
	peer := newCountingPeer(t)
	tc, _, local := pionDial(t, "tls", l.log.TLS, clientTLS)
	tlsStream, tlsPC, tlsRelay := relayStream(t, tc, peer)
	uc, _, _ := pionDial(t, "udp", l.log.UDP, nil)
	udpStream, _, udpRelay := relayStream(t, uc, peer)
	udpStream.waitEchoes(t, streamRate/2, 10*time.Second)

	first := l.serving()
	second := l.upgrade()
	l.handedOver(0, second, 1, 1)
	udpStream.waitEchoes(t, udpStream.echoed()+streamRate/2, 10*time.Second)

	from := l.log.logCount()
	third := l.upgrade()
	l.handedOver(from, third, 1, 0)
	second.waitGone(t, 10*time.Second, l.log) // it held nothing that stays
	udpStream.waitEchoes(t, udpStream.echoed()+streamRate, 10*time.Second)
	tlsStream.waitEchoes(t, tlsStream.echoed()+streamRate, 10*time.Second)
	if first.exited() {
		t.Fatal("the first turnd exited while it held a TLS client")
	}
	requireOwner(t, "the TLS client's connection", "tcp", l.log.TLS, local, first, first, second, third)
	requireOwner(t, "the TLS client's relayed socket", "udp", tlsRelay.String(), "", first, first, second, third)
	requireOwner(t, "the UDP client's relayed socket", "udp", udpRelay.String(), "", third, first, second, third)
	requireOwner(t, "the TLS listener", "tcp", l.log.TLS, "0.0.0.0:0", third, first, second, third)

	udpStream.finish(t).requirePerfect(t, "UDP stream across two upgrades")
	tlsStream.finish(t).requirePerfect(t, "TLS stream in the first process")
	if err := tlsPC.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if code := first.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the first turnd exited %d once its TLS client left, want 0", code)
	}
	if third.exited() {
		t.Fatal("the serving turnd exited with the first one")
	}
	relayed(t, testturn.Dial(t, "udp", l.log.UDP, "demo", "demo"), peer.addr())
}

// TestUpgradeOldProcessDrainDeadline: a TLS client that never leaves holds
// the old process only until drain.timeout, counted from the hand-over;
// then the old process closes it and exits 0, and the new one serves on.
func TestUpgradeOldProcessDrainDeadline(t *testing.T) {
	cfg := upgradeConfig(t)
	cfg.Drain.Timeout = 2 * time.Second
	clientTLS := withFixedTLS(t, &cfg)
	l := startUpgradable(t, writeConfig(t, cfg))
	peer := echoPeer(t)
	c := testturn.DialTLS(t, l.log.TLS, clientTLS, "demo", "demo")
	relayed(t, c, peer)

	old := l.serving()
	next := l.upgrade()
	handed := time.Now()
	l.handedOver(0, next, 0, 1)
	if code := c.Refresh(10 * time.Minute); code != 0 {
		t.Fatalf("refresh on the old process: %d", code)
	}
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d at its drain deadline, want 0", code)
	}
	if d := time.Since(handed); d < cfg.Drain.Timeout || d > cfg.Drain.Timeout+3*time.Second {
		t.Errorf("the old turnd exited %v after the hand-over, want about drain.timeout (%v)", d, cfg.Drain.Timeout)
	}
	if !c.WaitClosed(readDeadline) {
		t.Error("the TLS client's connection stayed open after the old process exited")
	}
	if next.exited() {
		t.Fatal("the new turnd exited with the old one")
	}
	relayed(t, testturn.DialTLS(t, l.log.TLS, clientTLS, "demo", "demo"), peer)
}
