package deploytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// uclientResult is what coturn's turnutils_uclient reported.
type uclientResult struct {
	exit       int
	sent, recv int
	lost       int
	took       time.Duration
	out        string
}

var (
	reUclientTotals = regexp.MustCompile(`start_mclient: tot_send_msgs=(\d+), tot_recv_msgs=(\d+)`)
	reUclientLost   = regexp.MustCompile(`Total lost packets (\d+) `)
)

// runUclient runs turnutils_uclient inside ns (with `ip netns exec`) against
// server, killed by PID if it outlives timeout or ctx. It returns an error
// instead of failing the test so that runs can go in the background.
func runUclient(ctx context.Context, ip, uclient string, ns netns, timeout time.Duration, server netip.AddrPort, args ...string) (uclientResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	full := append([]string{"netns", "exec", string(ns), uclient}, args...)
	full = append(full, "-p", strconv.Itoa(int(server.Port())), server.Addr().String())
	// `ip netns exec` execs uclient, so the context's kill reaches it by PID.
	cmd := exec.CommandContext(ctx, ip, full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	err := cmd.Run()
	res := uclientResult{out: out.String(), lost: -1, took: time.Since(started)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("uclient %s stopped after %v: %w:\n%s", strings.Join(full, " "), res.took, ctx.Err(), tail(res.out))
	case errors.As(err, &ee):
		res.exit = ee.ExitCode()
	case err != nil:
		return res, fmt.Errorf("run uclient: %w", err)
	}
	if m := reUclientTotals.FindAllStringSubmatch(res.out, -1); len(m) > 0 {
		last := m[len(m)-1]
		res.sent, _ = strconv.Atoi(last[1])
		res.recv, _ = strconv.Atoi(last[2])
	}
	if m := reUclientLost.FindStringSubmatch(res.out); m != nil {
		res.lost, _ = strconv.Atoi(m[1])
	}
	return res, nil
}

// zeroLoss says what is wrong with a run that should have relayed want
// messages each way without loss.
func (r uclientResult) zeroLoss(want int) error {
	if r.exit != 0 || r.lost != 0 || r.sent != want || r.recv != want {
		return fmt.Errorf("uclient exit=%d sent=%d recv=%d lost=%d (want %d each way, 0 lost):\n%s",
			r.exit, r.sent, r.recv, r.lost, want, tail(r.out))
	}
	return nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}
