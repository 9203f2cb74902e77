package e2e

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/handover"
)

// fakeSuccessorEnv makes the test binary, started as turnd's successor, a
// successor that takes the offer (every socket of the old process) and is
// then killed: what a crash or an OOM kill in the middle of a hand-over
// looks like to the old process.
const fakeSuccessorEnv = "TURND_E2E_FAKE_SUCCESSOR"

func fakeSuccessor() int {
	c, ok, err := handover.FromEnv()
	if !ok || err != nil {
		fmt.Fprintln(os.Stderr, "fake successor: no hand-over socket:", err)
		return 1
	}
	if err := c.Hello([]int{1, 2}, os.Getpid()); err != nil {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.ReceiveOffer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "fake successor: no offer:", err)
		return 1
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // holding every descriptor, before serving
	return 1
}
