package lifecycle

import (
	"errors"
	"testing"
	"time"
)

func TestFirstReturnInterruptsAllAndIsReported(t *testing.T) {
	var g Group
	boom := errors.New("boom")
	interrupted := make(chan string, 3)
	block := func(name string) {
		stop := make(chan struct{})
		g.Add(name, func() error { <-stop; return nil }, func(error) { interrupted <- name; close(stop) })
	}
	block("a")
	g.Add("fails", func() error { return boom }, func(error) { interrupted <- "fails" })
	block("b")

	res := make(chan Stopped, 1)
	go func() { res <- g.Run() }()
	select {
	case got := <-res:
		if got.Actor != "fails" || !errors.Is(got.Err, boom) {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("group did not stop")
	}
	if len(interrupted) != 3 {
		t.Fatalf("%d actors interrupted, want 3", len(interrupted))
	}
}

func TestEmptyGroup(t *testing.T) {
	var g Group
	if got := g.Run(); got.Actor != "" || got.Err != nil {
		t.Fatalf("got %+v", got)
	}
}
