package e2e

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUpgradeThatFailsChangesNothing: turnd runs from an executable the
// test can replace. No executable at the path, a successor that exits at once, one that refuses its
// config, one that fails after it was sent the sockets, one killed (SIGKILL)
// while it holds them, and one that never answers (killed after
// handover.timeout) each make `turnd upgrade` exit
// non-zero with a reason while the old turnd keeps every socket and relays
// a UDP stream on with nothing lost; with the real executable and config
// back, an upgrade then succeeds.
func TestUpgradeThatFailsChangesNothing(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "turnd")
	real, err := os.ReadFile(turndBin)
	if err != nil {
		t.Fatal(err)
	}
	replaceExecutable(t, bin, real)
	cfg := upgradeConfig(t)
	cfg.Handover.Timeout = 2 * time.Second
	path := writeConfig(t, cfg)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := launchLineage(t, bin, path)
	l.awaitServing()
	old := l.serving()
	peer := newCountingPeer(t)
	c, tap, _ := pionDial(t, "udp", l.log.UDP, nil)
	s, _, relay := relayStream(t, c, peer)
	s.waitEchoes(t, streamRate/2, 10*time.Second)

	// refused runs an upgrade that must fail and checks nothing changed. A
	// successor that ends by itself is known to have failed at once: the
	// answer must not wait for handover.timeout.
	refused := func(name string, prompt bool) upgradeRun {
		t.Helper()
		from := l.log.logCount()
		out := runUpgrade(t, "--pid", strconv.Itoa(old.pid))
		t.Logf("%s: turnd upgrade exit %d after %v; stderr: %s", name, out.code, out.took.Round(time.Millisecond),
			strings.TrimSpace(out.stderr))
		if out.code == 0 || strings.TrimSpace(out.stderr) == "" {
			t.Errorf("%s: turnd upgrade exit %d, stderr %q; want non-zero with the reason\nstdout: %s",
				name, out.code, out.stderr, out.stdout)
		}
		if prompt && out.took >= cfg.Handover.Timeout {
			t.Errorf("%s: turnd upgrade answered after %v, want before handover.timeout (%v): the successor had exited",
				name, out.took.Round(time.Millisecond), cfg.Handover.Timeout)
		}
		if old.exited() {
			t.Fatalf("%s: the old turnd exited", name)
		}
		if n := l.log.countLogFrom(from, "handed over"); n != 0 {
			t.Errorf("%s: the old turnd logged %d hand-overs", name, n)
		}
		requireOwner(t, name+": the UDP listener", "udp", l.log.UDP, "", old, old)
		requireOwner(t, name+": the relayed socket", "udp", relay.String(), "", old, old)
		s.waitEchoes(t, s.echoed()+streamRate/2, 10*time.Second) // relaying on
		return out
	}

	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	refused("no executable at the path", true)

	replaceExecutable(t, bin, []byte("#!/bin/sh\nexit 1\n"))
	refused("a successor that exits at once", true)

	replaceExecutable(t, bin, real)
	if err := os.WriteFile(path, []byte("realm: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("a successor that refuses its config", true)

	// This one fails after the old process froze and sent its sockets:
	// the config adds a TCP listener on an address the test holds, which
	// the successor must bind anew and cannot. The old process thaws.
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grown := cfg
	grown.Listen.TCP = append(append([]string{}, cfg.Listen.TCP...), busy.Addr().String())
	rewriteConfig(t, path, grown)
	refused("a successor that fails after the offer", true)
	busy.Close()
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}

	replaceExecutable(t, bin, []byte("#!/bin/sh\n"+fakeSuccessorEnv+"=1 exec "+os.Args[0]+"\n"))
	refused("a successor killed mid-hand-over, holding every socket", true)

	pidFile := filepath.Join(dir, "hung.pid")
	replaceExecutable(t, bin, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 30\n"))
	hung := refused("a successor that never answers", false)
	if hung.took < cfg.Handover.Timeout || hung.took > cfg.Handover.Timeout+5*time.Second {
		t.Errorf("an unanswering successor was given up after %v, want handover.timeout (%v)", hung.took, cfg.Handover.Timeout)
	}
	requireKilled(t, pidFile, l.log)

	replaceExecutable(t, bin, real)
	mark := tap.received()
	from := l.log.logCount()
	next := l.upgrade()
	l.handedOver(from, next, 1, 0)
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d after handing over, want 0", code)
	}
	s.waitEchoes(t, s.echoed()+streamRate/2, 10*time.Second)
	requireOwner(t, "the relayed socket", "udp", relay.String(), "", next, old, next)
	refresh(t, c, tap, refreshTo)
	s.finish(t).requirePerfect(t, "UDP stream across six failed upgrades and a good one")
	if errs := tap.errorsSince(mark); len(errs) > 0 {
		t.Errorf("error responses after the upgrade: %v", errs)
	}
}

// replaceExecutable puts an executable with content at path the way a
// package manager does: written beside it, then renamed over it (a running
// executable cannot be written in place).
func replaceExecutable(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// requireKilled fails unless the process whose PID the hanging successor
// wrote to pidFile is gone (or goes within 5 s): turnd must kill a
// successor it gave up on.
func requireKilled(t *testing.T, pidFile string, log *turnd) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hanging successor never ran: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	p, err := tryWatchPID(pid)
	if errors.Is(err, unix.ESRCH) {
		return // gone and reaped already
	}
	if err != nil {
		t.Fatalf("pidfd of the hanging successor %d: %v", pid, err)
	}
	t.Cleanup(p.stop)
	p.waitGone(t, 5*time.Second, log)
}
