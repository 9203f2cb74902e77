package sdnotify

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBarrierWaitsForSystemd: Barrier returns once the receiver closed the
// descriptor it sent, as systemd does after reading what came before, and
// times out when the receiver holds it.
func TestBarrierWaitsForSystemd(t *testing.T) {
	name, conn := listen(t, false)
	n := New(name)
	got := make(chan *os.File, 1)
	go func() {
		buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || string(buf[:k]) != "BARRIER=1" {
			got <- nil
			return
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		fds, _ := unix.ParseUnixRights(&msgs[0])
		got <- os.NewFile(uintptr(fds[0]), "barrier")
	}()
	done := make(chan error, 1)
	go func() { done <- n.Barrier(5 * time.Second) }()
	f := <-got
	if f == nil {
		t.Fatal("no BARRIER=1 with a descriptor")
	}
	select {
	case err := <-done:
		t.Fatalf("Barrier returned (%v) while systemd still held the descriptor", err)
	default:
	}
	_ = f.Close()
	if err := <-done; err != nil {
		t.Fatalf("Barrier after the close: %v", err)
	}

	// A receiver that never closes it: the timeout.
	held := make(chan *os.File, 1)
	go func() {
		buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, _ := conn.ReadMsgUnix(buf, oob)
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		fds, _ := unix.ParseUnixRights(&msgs[0])
		held <- os.NewFile(uintptr(fds[0]), "barrier")
	}()
	_ = conn.SetReadDeadline(time.Time{})
	if err := n.Barrier(50 * time.Millisecond); !errors.Is(err, ErrBarrierTimeout) {
		t.Fatalf("Barrier with the descriptor held: %v", err)
	}
	(<-held).Close()
	var none *Notifier
	if err := none.Barrier(time.Second); err != nil {
		t.Fatal(err)
	}
}
