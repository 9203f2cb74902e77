package handover

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const childEnv = "HANDOVER_TEST_CHILD"

// TestChildHelper is the successor's side of TestPairWithChild, run in a
// child process: it takes over through FromEnv and writes into the pipe
// it received.
func TestChildHelper(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestPairWithChild")
	}
	c, ok, err := FromEnv()
	if err != nil || !ok {
		t.Fatalf("FromEnv = %v, %v", ok, err)
	}
	defer c.Close()
	if v, set := os.LookupEnv(EnvFD); set {
		t.Fatalf("%s still set to %q", EnvFD, v)
	}
	ctx := testCtx(t)
	if err := c.Hello([]int{1}, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	o, err := c.ReceiveOffer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(o.Files[0], "child %d", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	_ = o.Files[0].Close()
	if err := c.Serving(); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitCommit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A successor started with the child end of Pair takes over through
// FromEnv.
func TestPairWithChild(t *testing.T) {
	checkGoroutines(t)
	ctx := testCtx(t)
	parent, child, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, "-test.run=^TestChildHelper$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", EnvFD+"=3")
	cmd.ExtraFiles = []*os.File{child}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = child.Close()
	waited := false
	defer func() {
		if !waited { // a failed check must not leave the child behind
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	r, w := pipe(t)
	req, err := parent.ReadRequest(ctx)
	if err != nil || req.Kind != KindTakeOver || req.PID != cmd.Process.Pid {
		t.Fatalf("request %+v, %v (child pid %d)\n%s", req, err, cmd.Process.Pid, out.String())
	}
	if err := parent.Offer(Offer{Version: 1, Names: []string{"pipe"}, Files: []*os.File{w}}); err != nil {
		t.Fatal(err)
	}
	if err := parent.AwaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	if err := parent.Commit(); err != nil {
		t.Fatal(err)
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	_ = w.Close()
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	if want := "child " + strconv.Itoa(cmd.Process.Pid); string(buf[:n]) != want {
		t.Fatalf("pipe read %q, want %q", buf[:n], want)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvFD, "")
	_ = os.Unsetenv(EnvFD)
	if c, ok, err := FromEnv(); c != nil || ok || err != nil {
		t.Fatalf("FromEnv without %s = %v, %v, %v", EnvFD, c, ok, err)
	}
	t.Setenv(EnvFD, "three")
	if _, _, err := FromEnv(); err == nil {
		t.Fatal("FromEnv of a non-number succeeded")
	}
	// FromEnv takes the descriptor it is given: give it duplicates.
	r, _ := pipe(t)
	t.Setenv(EnvFD, strconv.Itoa(dupFd(t, r)))
	if _, _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), EnvFD) {
		t.Fatalf("FromEnv of a pipe: %v", err)
	}
	parent, child, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	t.Setenv(EnvFD, strconv.Itoa(dupFd(t, child)))
	_ = child.Close()
	c, ok, err := FromEnv()
	if err != nil || !ok {
		t.Fatalf("FromEnv = %v, %v", ok, err)
	}
	defer c.Close()
	if v, set := os.LookupEnv(EnvFD); set {
		t.Fatalf("FromEnv left %s=%s set", EnvFD, v)
	}
	if err := c.Hello([]int{1}, 7); err != nil {
		t.Fatal(err)
	}
	if req, err := parent.ReadRequest(testCtx(t)); err != nil || req.PID != 7 {
		t.Fatalf("ReadRequest = %+v, %v", req, err)
	}
}

func dupFd(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := rawFd(f)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return dup
}
