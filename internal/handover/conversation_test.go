package handover

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// oldSide plays the old process: it offers a pipe's write end and a UDP
// socket with a datagram queued, then waits for serving and commits.
func oldSide(ctx context.Context, c *Conn, pipeW *os.File, udp *os.File) error {
	req, err := c.ReadRequest(ctx)
	if err != nil {
		return err
	}
	if req.Kind != KindTakeOver || req.PID != 4242 {
		return errors.New("wrong request")
	}
	v, ok := Choose(req.Versions, []int{1, 2})
	if !ok {
		return c.Refuse("no common version")
	}
	err = c.Offer(Offer{Version: v, State: []byte(`{"allocations":3}`),
		Names: []string{"pipe", "udp:client"}, Files: []*os.File{pipeW, udp}})
	if err != nil {
		return err
	}
	if err := c.AwaitServing(ctx); err != nil {
		return err
	}
	return c.Commit()
}

// newSide plays the successor and checks that what it received works.
func newSide(t *testing.T, ctx context.Context, c *Conn) {
	t.Helper()
	if err := c.Hello([]int{2, 3}, 4242); err != nil {
		t.Fatal(err)
	}
	o, err := c.ReceiveOffer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, f := range o.Files {
			_ = f.Close()
		}
	}()
	if o.Version != 2 || string(o.State) != `{"allocations":3}` || len(o.Files) != 2 ||
		o.Names[0] != "pipe" || o.Names[1] != "udp:client" {
		t.Fatalf("offer %+v", o)
	}
	for _, f := range o.Files {
		if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s received without close-on-exec (flags %#x, %v)", f.Name(), flags, err)
		}
	}
	if _, err := o.Files[0].Write([]byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	pc, err := net.FilePacketConn(o.Files[1])
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	_ = pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "queued" {
		t.Fatalf("read %q, %v from the passed udp socket", buf[:n], err)
	}
	if err := c.Serving(); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitCommit(ctx); err != nil {
		t.Fatal(err)
	}
}

func runTakeOver(t *testing.T, oldC, newC *Conn) {
	t.Helper()
	ctx := testCtx(t)
	pipeR, pipeW := pipe(t)
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	client, err := net.DialUDP("udp", nil, udp.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	udpFile, err := udp.File()
	if err != nil {
		t.Fatal(err)
	}
	defer udpFile.Close()

	done := make(chan error, 1)
	go func() { done <- oldSide(ctx, oldC, pipeW, udpFile) }()
	newSide(t, ctx, newC)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := pipeR.Read(buf)
	if err != nil || string(buf[:n]) != "through the pipe" {
		t.Fatalf("pipe read %q, %v", buf[:n], err)
	}
}

func TestTakeOverOverPair(t *testing.T) {
	checkGoroutines(t)
	oldC, newC := pair(t)
	runTakeOver(t, oldC, newC)
}

func TestTakeOverOverListener(t *testing.T) {
	checkGoroutines(t)
	ln, err := Listen(t.TempDir() + "/run/handover.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	newC, err := Dial(testCtx(t), ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer newC.Close()
	oldC := <-accepted
	if oldC == nil {
		t.FailNow()
	}
	defer oldC.Close()
	runTakeOver(t, oldC, newC)
}

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		theirs, ours []int
		want         int
		ok           bool
	}{
		{[]int{1, 2, 3}, []int{2, 3, 4}, 3, true},
		{[]int{3, 1}, []int{1, 3}, 3, true},
		{[]int{1}, []int{1}, 1, true},
		{[]int{2}, []int{1, 3}, 0, false},
		{nil, []int{1}, 0, false},
	} {
		got, ok := Choose(tc.theirs, tc.ours)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Choose(%v, %v) = %d, %v; want %d, %v", tc.theirs, tc.ours, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRefusedVersion(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	oldC, newC := pair(t)
	go func() {
		req, err := oldC.ReadRequest(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if _, ok := Choose(req.Versions, []int{1}); !ok {
			_ = oldC.Refuse("state version 7 unknown here")
		}
		_ = oldC.Close()
	}()
	if err := newC.Hello([]int{7}, 1); err != nil {
		t.Fatal(err)
	}
	_, err := newC.ReceiveOffer(ctx)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "state version 7 unknown here") {
		t.Fatalf("ReceiveOffer: %v; want ErrRefused with the reason", err)
	}
}

func TestUpgradeRequest(t *testing.T) {
	checkGoroutines(t)
	for _, answer := range []error{nil, errors.New("successor exited: status 2")} {
		ctx := testCtx(t)
		old, cli := pair(t)
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			req, err := old.ReadRequest(ctx)
			if err != nil || req.Kind != KindUpgrade {
				t.Errorf("request %+v, %v", req, err)
				return
			}
			_ = old.AnswerUpgrade(31337, answer)
		}()
		pid, err := RequestUpgrade(ctx, cli)
		if answer == nil && (err != nil || pid != 31337) {
			t.Fatalf("RequestUpgrade = %d, %v; want 31337", pid, err)
		}
		if answer != nil && (!errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), answer.Error())) {
			t.Fatalf("RequestUpgrade = %d, %v; want the reason %q", pid, err, answer)
		}
		<-answered
	}
}

func TestAwaitServingOutcomes(t *testing.T) {
	checkGoroutines(t)
	t.Run("failed", func(t *testing.T) {
		oldC, newC := pair(t)
		_ = newC.Fail("config refused: relay.ports: empty")
		err := oldC.AwaitServing(testCtx(t))
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "relay.ports: empty") {
			t.Fatalf("AwaitServing: %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		oldC, newC := pair(t)
		_ = newC.Close()
		if err := oldC.AwaitServing(testCtx(t)); !errors.Is(err, ErrClosed) {
			t.Fatalf("AwaitServing: %v; want ErrClosed", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		oldC, _ := pair(t)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := awaitWithin(t, oldC, ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AwaitServing: %v; want the deadline", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		oldC, _ := pair(t)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		if err := awaitWithin(t, oldC, ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("AwaitServing: %v; want cancellation", err)
		}
	})
}

// awaitWithin runs AwaitServing and fails t if ctx did not end it.
func awaitWithin(t *testing.T, c *Conn, ctx context.Context) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.AwaitServing(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = c.Close() // wakes it, so the goroutine ends
		<-done
		t.Fatal("AwaitServing ignored its context")
		return nil
	}
}

func TestOutOfOrderAndUnknown(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	oldC, newC := pair(t)
	_ = newC.Serving()
	if _, err := oldC.ReadRequest(ctx); err == nil || !strings.Contains(err.Error(), `unexpected "serving" message where request was due`) {
		t.Fatalf("ReadRequest after serving: %v", err)
	}
	oldC, newC = pair(t)
	buf, _ := encodeFrame(message{Type: "teleport"})
	if _, err := newC.uc.Write(buf); err != nil {
		t.Fatal(err)
	}
	if _, err := oldC.ReadRequest(ctx); err == nil || !strings.Contains(err.Error(), `unknown message type "teleport"`) {
		t.Fatalf("ReadRequest of an unknown type: %v", err)
	}
	// The conversation is over once it went wrong.
	if err := oldC.AwaitServing(ctx); err == nil {
		t.Fatal("a broken conversation went on")
	}
}

func TestPeerClosesMidFrame(t *testing.T) {
	oldC, newC := pair(t)
	buf, _ := encodeFrame(message{Type: typeHello, Versions: []int{1}})
	_, _ = newC.uc.Write(buf[:len(buf)-3])
	_ = newC.Close()
	_, err := oldC.ReadRequest(testCtx(t))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadRequest of a cut frame: %v", err)
	}
}

// A state of many megabytes crosses in many short writes and reads, with
// its descriptor after it.
func TestLargeState(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	oldC, newC := pair(t)
	state := make([]byte, 10<<20)
	for i := range state {
		state[i] = byte(i * 7 / 5)
	}
	_, w := pipe(t)
	sent := make(chan error, 1)
	go func() {
		sent <- oldC.Offer(Offer{Version: 1, State: state, Names: []string{"w"}, Files: []*os.File{w}})
	}()
	o, err := newC.ReceiveOffer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Files[0].Close()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.State, state) || len(o.Files) != 1 {
		t.Fatalf("state of %d bytes, %d files", len(o.State), len(o.Files))
	}
}

// One read's deadline does not outlive it: the next read, with no
// deadline, waits for as long as its peer takes.
func TestDeadlineDoesNotOutliveRead(t *testing.T) {
	checkGoroutines(t)
	oldC, newC := pair(t)
	_ = newC.Hello([]int{1}, 1)
	short, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := oldC.ReadRequest(short); err != nil {
		t.Fatal(err)
	}
	late := time.AfterFunc(500*time.Millisecond, func() { _ = newC.Serving() })
	defer late.Stop()
	if err := oldC.AwaitServing(t.Context()); err != nil { // no deadline of its own
		t.Fatalf("AwaitServing after a read with a deadline: %v", err)
	}
}

// A successor that dies while the state is on its way leaves the old
// process with an error, not a hang.
func TestReceiverDiesMidOffer(t *testing.T) {
	checkGoroutines(t)
	oldC, newC := pair(t)
	_, w := pipe(t)
	got := make(chan error, 1)
	go func() {
		var hdr [4]byte
		_, err := io.ReadFull(newC.rd, hdr[:])
		_ = newC.Close()
		got <- err
	}()
	err := oldC.Offer(Offer{Version: 1, State: make([]byte, 16<<20), Names: []string{"w"}, Files: []*os.File{w}})
	if err == nil {
		t.Fatal("Offer to a successor that died succeeded")
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestLentDescriptors: descriptors lent by number arrive after the files,
// work on the other side, and stay open and unchanged (non-blocking) here.
func TestLentDescriptors(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	oldC, newC := pair(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	lr, lw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	defer lw.Close()
	var lent int
	rc, err := lw.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) { lent = int(fd) })
	if err := unix.SetNonblock(lent, true); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		sent <- oldC.Offer(Offer{Version: 1, State: []byte(`{}`), Names: []string{"file", "lent"}, Files: []*os.File{w}, Fds: []int{lent}})
	}()
	got, err := newC.ReceiveOffer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, f := range got.Files {
			f.Close()
		}
	}()
	if len(got.Files) != 2 || got.Names[1] != "lent" {
		t.Fatalf("received %d files named %v, want the file then the lent one", len(got.Files), got.Names)
	}
	if _, err := got.Files[1].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := lr.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("read %q, %v through the lent descriptor", b, err)
	}
	flags, err := unix.FcntlInt(uintptr(lent), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK == 0 {
		t.Fatalf("the lent descriptor here: flags %#x, %v; want it open and non-blocking", flags, err)
	}
}
