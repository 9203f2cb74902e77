package server_test

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/server"
)

// tcpEchoPeer is a loopback TCP peer that echoes every connection until
// the test ends.
func tcpEchoPeer(t *testing.T) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}

// echoSeq writes the numbers [0, total) to c as 4-byte words and reads
// them back, failing on the first one lost, repeated or out of order; the
// second half is written once gate is closed.
func echoSeq(c net.Conn, total uint32, gate <-chan struct{}) error {
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 4*64)
		for n := uint32(0); n < total; {
			if n == total/2 {
				<-gate
			}
			buf = buf[:0]
			for ; n < total && len(buf) < cap(buf) && (n != total/2 || len(buf) == 0); n++ {
				buf = binary.BigEndian.AppendUint32(buf, n)
			}
			if _, err := c.Write(buf); err != nil {
				werr <- fmt.Errorf("write up to %d: %w", n, err)
				return
			}
		}
		werr <- nil
	}()
	var word [4]byte
	for want := uint32(0); want < total; want++ {
		if _, err := io.ReadFull(c, word[:]); err != nil {
			return fmt.Errorf("read %d: %w", want, err)
		}
		if got := binary.BigEndian.Uint32(word[:]); got != want {
			return fmt.Errorf("read %d, want %d", got, want)
		}
	}
	return <-werr
}

// TestStateRoundTripRFC6062: an RFC 6062 allocation moves to a successor
// in one process with its control connection, its relay's listener, a
// bound pair and a peer waiting for ConnectionBind: a numbered stream
// through the bound pair to an echo peer crosses the switch with nothing
// lost or repeated, the waiting peer is bound through the successor, a
// new Connect works, and Refresh(0) ends it with a usage record written
// by the successor alone.
func TestStateRoundTripRFC6062(t *testing.T) {
	optsA := testOptions()
	usageA := usageLog(&optsA)
	a := start(t, optsA)
	echo := tcpEchoPeer(t)

	c := dial(t, a, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relayed := testturn.Relayed(t, resp)
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	id := connectID(t, c, echo)
	data := dial(t, a, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")

	// A second peer connects and waits for its ConnectionBind.
	waiting, err := net.DialTimeout("tcp4", (&net.TCPAddr{IP: relayed.IP, Port: relayed.Port}).String(), waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiting.Close() })
	attempt := c.Indication(stun.MethodConnectionAttempt, waitTimeout)
	waitingID, err := attempt.Get(stun.AttrConnectionID)
	if err != nil {
		t.Fatalf("ConnectionAttempt without CONNECTION-ID: %v", err)
	}

	// The first half flows before the switch, the second is sent while
	// both servers are frozen: the kernel queues it for the successor.
	const total = 200000
	_ = data.Conn().SetDeadline(time.Now().Add(4 * waitTimeout))
	frozen := make(chan struct{})
	flowed := make(chan error, 1)
	go func() { flowed <- echoSeq(data.Conn(), total, frozen) }()

	f := freeze(t, a)
	close(frozen)
	optsB := testOptions()
	usageB := usageLog(&optsB)
	b := successor(t, f, optsB)
	if moved, stayed := f.Commit(); moved != 1 || stayed != 0 {
		t.Fatalf("commit moved %d, left %d; want 1 and 0", moved, stayed)
	}
	b.Start()
	if !slices.ContainsFunc(f.Names, func(n string) bool { return strings.HasPrefix(n, "tcp data connection ") }) {
		t.Fatalf("the bound pair's data connection was not passed: %q", f.Names)
	}
	// Stopping the first server mid-stream cuts nothing of what moved.
	if n := a.Table().Count(); n != 0 {
		t.Fatalf("the first server still holds %d allocations", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-flowed; err != nil {
		t.Fatalf("the bound pair across the switch: %v", err)
	}

	// The waiting peer is bound through the successor.
	data2 := dial(t, b, "tcp")
	wantCode(t, data2, data2.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, waitingID)), 0,
		"ConnectionBind of the waiting peer through the successor")
	if _, err := waiting.Write([]byte("waited")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("waited"))
	_ = data2.Conn().SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(data2.Conn(), got); err != nil || string(got) != "waited" {
		t.Fatalf("the waiting peer's bytes through the successor: %q (%v)", got, err)
	}
	// A new Connect, answered by the successor.
	id3 := connectID(t, c, tcpEchoPeer(t))
	data3 := dial(t, b, "tcp")
	wantCode(t, data3, data3.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id3)), 0,
		"ConnectionBind of a Connect through the successor")
	_ = data3.Conn().SetDeadline(time.Now().Add(waitTimeout))
	open := make(chan struct{})
	close(open)
	if err := echoSeq(data3.Conn(), 1000, open); err != nil {
		t.Fatalf("a new pair through the successor: %v", err)
	}

	if code := c.Refresh(0); code != 0 {
		t.Fatalf("refresh(0) through the successor: %d", code)
	}
	rec := nextRecord(t, usageB)
	if rec["reason"] != allocation.EndReleased.String() || rec["to_peer_bytes"].(uint64) < 4*total {
		t.Fatalf("successor's usage record %v: want released, counting the bytes relayed before the switch", rec)
	}
	select {
	case rec := <-usageA:
		t.Fatalf("the first server wrote a usage record for a moved allocation: %v", rec)
	default:
	}
}

// TestHandOverKeepsTLSRFC6062: what a TLS connection carries stays in the
// first server and flows on there: an RFC 6062 allocation whose control
// connection is TLS, with its pair, and the TLS data connection of an
// allocation that moves (its peer connection stays with it); the plain
// TCP control connection of that allocation is the successor's.
func TestHandOverKeepsTLSRFC6062(t *testing.T) {
	certFile, keyFile := writeCert(t, t.TempDir(), 1)
	optsA := testOptions()
	optsA.Config.Listen.TLS = []string{"127.0.0.1:0"}
	optsA.Config.TLS.CertFile, optsA.Config.TLS.KeyFile = certFile, keyFile
	a := start(t, optsA)
	tlsAddr := a.TLSAddrs()[0].String()
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed test certificate
	echo := tcpEchoPeer(t)
	bindOn := func(data, ctl *testturn.Client) net.Conn {
		t.Helper()
		if code := ctl.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
			t.Fatalf("permission: %d", code)
		}
		id := connectID(t, ctl, echo)
		wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
		_ = data.Conn().SetDeadline(time.Now().Add(4 * waitTimeout))
		return data.Conn()
	}
	open := make(chan struct{})
	close(open)

	// X: a TLS control connection, and a plain TCP pair.
	ctlX := testturn.DialTLS(t, tlsAddr, cfg, "demo", "demo")
	wantCode(t, ctlX, ctlX.AllocateTCP(), 0, "tcp allocation over tls")
	pairX := bindOn(dial(t, a, "tcp"), ctlX)
	// Y: a plain TCP control connection, and a pair over TLS.
	ctlY := tcpRelayClient(t, a)
	pairY := bindOn(testturn.DialTLS(t, tlsAddr, cfg, "demo", "demo"), ctlY)
	for _, c := range []net.Conn{pairX, pairY} {
		if err := echoSeq(c, 1000, open); err != nil {
			t.Fatalf("before the switch: %v", err)
		}
	}

	f := freeze(t, a)
	optsB := testOptions()
	optsB.Config.Listen.TLS = optsA.Config.Listen.TLS
	optsB.Config.TLS = optsA.Config.TLS
	b := successor(t, f, optsB)
	if moved, stayed := f.Commit(); moved != 1 || stayed != 1 {
		t.Fatalf("commit moved %d, left %d; want Y's and X's", moved, stayed)
	}
	b.Start()
	if slices.ContainsFunc(f.Names, func(n string) bool { return strings.HasPrefix(n, "tcp data connection ") }) {
		t.Fatalf("a pair passed: %q, want both to stay (X's allocation, Y's TLS data connection)", f.Names)
	}
	for i, c := range []net.Conn{pairX, pairY} {
		if err := echoSeq(c, 1000, open); err != nil {
			t.Fatalf("pair %d after the switch: %v", i, err)
		}
	}
	if code := ctlY.Refresh(time.Minute); code != 0 || b.Table().Count() != 1 {
		t.Fatalf("Y's refresh through the successor: %d (successor holds %d)", code, b.Table().Count())
	}
	if code := ctlX.Refresh(time.Minute); code != 0 || a.Table().Count() != 1 {
		t.Fatalf("X's refresh through the first server: %d (it holds %d)", code, a.Table().Count())
	}
}

// TestThawAfterAFailedSuccessorKeepsRFC6062: a successor that adopted an
// RFC 6062 allocation, its pair and its waiting peer and then closed
// without serving changes nothing: after Thaw the first server's pair
// carries the rest of a numbered stream (part of it sent while frozen),
// the waiting peer is bound there, and a new Connect works.
func TestThawAfterAFailedSuccessorKeepsRFC6062(t *testing.T) {
	a := start(t, testOptions())
	echo := tcpEchoPeer(t)
	c := dial(t, a, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relayed := testturn.Relayed(t, resp)
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	id := connectID(t, c, echo)
	data := dial(t, a, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	waiting, err := net.DialTimeout("tcp4", (&net.TCPAddr{IP: relayed.IP, Port: relayed.Port}).String(), waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiting.Close() })
	waitingID, err := c.Indication(stun.MethodConnectionAttempt, waitTimeout).Get(stun.AttrConnectionID)
	if err != nil {
		t.Fatal(err)
	}

	const total = 100000
	_ = data.Conn().SetDeadline(time.Now().Add(4 * waitTimeout))
	frozen := make(chan struct{})
	flowed := make(chan error, 1)
	go func() { flowed <- echoSeq(data.Conn(), total, frozen) }()
	f := freeze(t, a)
	close(frozen)
	opts := testOptions()
	opts.Inherit = inherit(t, f)
	b, err := server.New(opts)
	if err != nil {
		f.Thaw()
		t.Fatalf("successor: %v", err)
	}
	_ = b.Close() // it fails before serving
	f.Thaw()

	if err := <-flowed; err != nil {
		t.Fatalf("the pair after the thaw: %v", err)
	}
	data2 := dial(t, a, "tcp")
	wantCode(t, data2, data2.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, waitingID)), 0,
		"ConnectionBind of the waiting peer after the thaw")
	if _, err := waiting.Write([]byte("waited")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("waited"))
	_ = data2.Conn().SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(data2.Conn(), got); err != nil || string(got) != "waited" {
		t.Fatalf("the waiting peer's bytes after the thaw: %q (%v)", got, err)
	}
	connectID(t, c, tcpEchoPeer(t))
}

// TestSuccessorReadsVersion1: a predecessor that wrote version 1 (before
// RFC 6062 relays moved: its state has none) is taken over.
func TestSuccessorReadsVersion1(t *testing.T) {
	a := start(t, testOptions())
	peer := echoPeer(t)
	u := dial(t, a, "udp")
	u.MustAllocate()
	u.Permit(peer)
	f := freeze(t, a)
	v2 := fmt.Sprintf(`{"version":%d,`, server.StateVersion)
	if !strings.HasPrefix(string(f.State), v2) {
		t.Fatalf("state begins %.20q, want %q", f.State, v2)
	}
	opts := testOptions()
	opts.Inherit = inherit(t, f)
	opts.Inherit.State = []byte(`{"version":1,` + string(f.State[len(v2):]))
	b, err := server.New(opts)
	if err != nil {
		f.Thaw()
		t.Fatalf("successor of a version 1 state: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	f.Commit()
	b.Start()
	if b.Table().Count() != 1 || !u.Echo(peer, "moved") {
		t.Fatal("the successor did not take the allocation of a version 1 state")
	}
}

// TestSecondHandOverMovesThePairAgain: a pair a successor adopted moves
// on to the next one, as a connection it accepted itself would.
func TestSecondHandOverMovesThePairAgain(t *testing.T) {
	a := start(t, testOptions())
	c := dial(t, a, "tcp")
	wantCode(t, c, c.AllocateTCP(), 0, "tcp allocation")
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	id := connectID(t, c, tcpEchoPeer(t))
	data := dial(t, a, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	_ = data.Conn().SetDeadline(time.Now().Add(4 * waitTimeout))
	moved := make(chan struct{})
	flowed := make(chan error, 1)
	go func() { flowed <- echoSeq(data.Conn(), 100000, moved) }()
	b := handOver(t, a, testOptions())
	_ = a.Close()
	cc := handOver(t, b, testOptions())
	_ = b.Close()
	close(moved)
	if err := <-flowed; err != nil {
		t.Fatalf("the pair across two hand-overs: %v", err)
	}
	if cc.Table().Count() != 1 {
		t.Fatalf("the third server holds %d allocations, want 1", cc.Table().Count())
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("refresh(0) through the third server: %d", code)
	}
}

// TestSuccessorAcceptsNoPeerBeforeStart: a successor built but not started
// accepts no RFC 6062 peer (its relay loops start parked); when the
// hand-over then fails, the first server takes the peer from the backlog
// and offers it to its client.
func TestSuccessorAcceptsNoPeerBeforeStart(t *testing.T) {
	a := start(t, testOptions())
	c := dial(t, a, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relayed := testturn.Relayed(t, resp)
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	f := freeze(t, a)
	opts := testOptions()
	opts.Inherit = inherit(t, f)
	b, err := server.New(opts)
	if err != nil {
		t.Fatalf("successor: %v", err)
	}
	peer, err := net.DialTimeout("tcp4", (&net.TCPAddr{IP: relayed.IP, Port: relayed.Port}).String(), waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	// Nothing signals an accept that must not happen: the peer must stay in
	// the relay listener's queue for a while.
	for end := time.Now().Add(waitTimeout); acceptQueue(t, relayed.Port) == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		if q := acceptQueue(t, relayed.Port); q != 1 {
			t.Fatalf("relay listener's queue holds %d peers, want the one nobody may accept yet", q)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = b.Close() // the successor fails before the commit
	f.Thaw()
	if m := c.Indication(stun.MethodConnectionAttempt, waitTimeout); m == nil {
		t.Fatal("no ConnectionAttempt from the first server for the peer that came during the failed hand-over")
	}
}

// TestFreezeDoesNotWaitForAStalledPipe: a bound pair whose client stopped
// reading while its peer floods it blocks one pipe direction in a write;
// the hand-over goes on without it (the pair stays with the first server)
// instead of stopping every client for handover.timeout.
func TestFreezeDoesNotWaitForAStalledPipe(t *testing.T) {
	a := start(t, testOptions())
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stalled := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for i := 0; i < 1<<12; i++ { // bounded: 256 MB, far past any socket buffer
			// A write that cannot finish: every buffer on the way is full,
			// so the pipe is blocked writing to the client.
			_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.Write(buf); err != nil {
				close(stalled)
				<-t.Context().Done()
				return
			}
		}
	}()
	c := dial(t, a, "tcp")
	wantCode(t, c, c.AllocateTCP(), 0, "tcp allocation")
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	id := connectID(t, c, ln.Addr())
	data := dial(t, a, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	<-stalled
	freeze(t, a) // fails the test if the pipe holds it
	// The other clients wait only for the switch: a Freeze that returns
	// means they are served again at the next step, whatever that pipe does.
}
