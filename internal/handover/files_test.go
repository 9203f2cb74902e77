package handover

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fileBudget raises RLIMIT_NOFILE for want more descriptors (restoring it
// after the test) and returns how many fit: fewer than want only where
// the hard limit is below what want needs and this process may not raise
// it.
func fileBudget(t *testing.T, want int) int {
	t.Helper()
	const headroom = 64
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	need := uint64(countFds(t) + want + headroom)
	lim := old
	lim.Cur = max(old.Cur, need)
	if lim.Max < lim.Cur {
		lim.Max = lim.Cur
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			lim.Cur, lim.Max = old.Max, old.Max // the most this process may have
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	n := min(want, int(lim.Cur)-countFds(t)-headroom)
	if n < want {
		t.Logf("RLIMIT_NOFILE hard limit %d: sending %d descriptors, not %d", old.Max, n, want)
	}
	return n
}

// 20 000 descriptors cross in batches the kernel accepts, each one lands
// as its own working descriptor, and none outlives the files closed.
func TestTwentyThousandFiles(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	oldC, newC := pair(t)
	readers := make([]*os.File, 8)
	offer := Offer{Version: 1, State: []byte("s")}
	writers := make([]*os.File, len(readers))
	for i := range readers {
		readers[i], writers[i] = pipe(t)
	}
	total := fileBudget(t, 20000)
	for i := range total {
		offer.Names = append(offer.Names, fmt.Sprintf("pipe-%d", i))
		offer.Files = append(offer.Files, writers[i%len(writers)])
	}
	before := countFds(t)
	sent := make(chan error, 1)
	go func() {
		err := oldC.Offer(offer)
		if err != nil {
			_ = oldC.Close() // so that the receiver ends too
		}
		sent <- err
	}()
	got, err := newC.ReceiveOffer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != total || countFds(t) != before+total {
		t.Fatalf("received %d files, %d descriptors more; want %d", len(got.Files), countFds(t)-before, total)
	}
	for _, i := range []int{0, 199, 200, total / 2, total - 1} {
		msg := got.Names[i]
		if _, err := got.Files[i].Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 32)
		n, err := readers[i%len(readers)].Read(buf)
		if err != nil || string(buf[:n]) != msg {
			t.Fatalf("file %d: read %q, %v", i, buf[:n], err)
		}
	}
	for _, f := range got.Files {
		_ = f.Close()
	}
	if n := countFds(t); n != before {
		t.Fatalf("%d descriptors open after closing the files, %d before", n, before)
	}
}

// A sender that dies after its first batch leaves the receiver with an
// error and none of the descriptors it had already received.
func TestPeerDiesMidOffer(t *testing.T) {
	oldC, newC := pair(t)
	_, w := pipe(t)
	fd, _ := rawFd(w)
	names := make([]string, 2*batch)
	fds := make([]int, batch)
	for i := range fds {
		fds[i] = fd
	}
	before := countFds(t)
	if err := oldC.write(message{Type: typeOffer, Version: 1, Names: names, Files: len(names)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := oldC.write(message{Type: typeFiles, Files: batch}, fds); err != nil {
		t.Fatal(err)
	}
	_ = oldC.Close()
	_, err := newC.ReceiveOffer(testCtx(t))
	if err == nil {
		t.Fatal("an offer cut after its first batch was received")
	}
	if n := countFds(t); n != before-1 { // the sender's end is closed
		t.Fatalf("%d descriptors open after the failed offer, want %d: received ones leaked", n, before-1)
	}
}

// A batch that brings fewer descriptors than its frame announces is an
// error, and the ones it brought are closed.
func TestBatchShortOfItsCount(t *testing.T) {
	oldC, newC := pair(t)
	_, w := pipe(t)
	fd, _ := rawFd(w)
	fds := make([]int, 10)
	for i := range fds {
		fds[i] = fd
	}
	names := make([]string, 20)
	before := countFds(t)
	_ = oldC.write(message{Type: typeOffer, Version: 1, Names: names, Files: 20}, nil)
	_ = oldC.write(message{Type: typeFiles, Files: 20}, fds)
	_, err := newC.ReceiveOffer(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "20 announced, 10 received") {
		t.Fatalf("ReceiveOffer: %v; want the count mismatch", err)
	}
	if n := countFds(t); n != before {
		t.Fatalf("%d descriptors open, %d before", n, before)
	}
}

// Descriptors riding with a message that carries none are refused and
// closed.
func TestStrayDescriptors(t *testing.T) {
	oldC, newC := pair(t)
	_, w := pipe(t)
	fd, _ := rawFd(w)
	before := countFds(t)
	_ = newC.write(message{Type: typeServing}, []int{fd, fd})
	err := oldC.AwaitServing(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), `2 descriptors arrived with a "serving" message`) {
		t.Fatalf("AwaitServing: %v", err)
	}
	if n := countFds(t); n != before {
		t.Fatalf("%d descriptors open, %d before", n, before)
	}
}

func TestTruncatedControlMessage(t *testing.T) {
	oldC, newC := pair(t)
	_, w := pipe(t)
	fd, _ := rawFd(w)
	newC.oob = newC.oob[:unix.CmsgSpace(4)] // room for two descriptors, three come
	before := countFds(t)
	_ = oldC.write(message{Type: typeOffer, Names: []string{"a", "b", "c"}, Files: 3}, nil)
	_ = oldC.write(message{Type: typeFiles, Files: 3}, []int{fd, fd, fd})
	_, err := newC.ReceiveOffer(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("ReceiveOffer: %v; want truncation", err)
	}
	if n := countFds(t); n != before {
		t.Fatalf("%d descriptors open, %d before", n, before)
	}
}

// A receiver out of descriptors (EMFILE: the kernel truncates the batch)
// errors and keeps none of the batch.
func TestReceiverOutOfDescriptors(t *testing.T) {
	oldC, newC := pair(t)
	_, w := pipe(t)
	fd, _ := rawFd(w)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	before := countFds(t)
	low := old
	low.Cur = uint64(before + 100) // room for half the batch
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }()
	fds := make([]int, batch)
	for i := range fds {
		fds[i] = fd
	}
	_ = oldC.write(message{Type: typeOffer, Names: make([]string, batch), Files: batch}, nil)
	_ = oldC.write(message{Type: typeFiles, Files: batch}, fds)
	_, err := newC.ReceiveOffer(testCtx(t))
	if err == nil {
		t.Fatal("ReceiveOffer succeeded beyond RLIMIT_NOFILE")
	}
	t.Log(err)
	if n := countFds(t); n != before {
		t.Fatalf("%d descriptors open, %d before: %v", n, before, err)
	}
}

// Reads that end inside a batch's frame, so that the next read brings
// the next batch before this frame is parsed, still count exactly.
func TestBatchesAcrossReadBoundaries(t *testing.T) {
	checkGoroutines(t)
	oldC, newC := pair(t)
	// Reads of 5 bytes end inside the 32-byte frames, and some begin the
	// next one.
	newC.rd = bufio.NewReaderSize(chunkReader{fdReader{newC}, 5}, 16)
	_, w := pipe(t)
	const total = 10*batch + 7
	offer := Offer{Version: 1}
	for i := range total {
		offer.Names = append(offer.Names, fmt.Sprint(i))
		offer.Files = append(offer.Files, w)
	}
	before := countFds(t)
	sent := make(chan error, 1)
	go func() { sent <- oldC.Offer(offer) }()
	got, err := newC.ReceiveOffer(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != total || countFds(t) != before+total {
		t.Fatalf("%d files, %d descriptors more; want %d", len(got.Files), countFds(t)-before, total)
	}
	for _, f := range got.Files {
		_ = f.Close()
	}
}

// chunkReader reads at most n bytes at a time.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
