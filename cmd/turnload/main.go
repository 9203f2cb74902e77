// Command turnload is a TURN load generator that aims not to be the
// bottleneck: batched sends and receives (sendmmsg/recvmmsg), a built-in
// batched echo peer, token-bucket pacing, and a report of its own CPU time
// next to the server's.
//
// Usage:
//
//	turnload relay [flags]   N allocations send ChannelData (or Send indications) at a
//	                         total rate through the server to an echo peer and back
//	turnload alloc [flags]   allocation burst: each client allocates once, then releases
//	turnload idle  [flags]   hold N allocations idle, for the server's RSS per allocation
//	turnload stream [flags]  hold N allocations idle beside one steady stream, and report
//	                         the stream's longest silence (a server's switch of processes)
//
// Run "turnload MODE -h" for the flags. It knows TURN only as a client over
// UDP; it knows nothing of how the server is built.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes one command line and returns the exit code: 0 when the run
// measured something, 1 when it could not, 2 for a bad command line.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "turnload: %v\n", err)
		return 2
	}
	// SIGINT/SIGTERM end the run early; allocations are still released.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep *report
	switch o.mode {
	case modeRelay:
		rep, err = runRelay(ctx, o, stderr)
	case modeAlloc:
		rep, err = runAlloc(ctx, o)
	case modeIdle:
		rep, err = runIdle(ctx, o, stderr)
	case modeStream:
		rep, err = runStream(ctx, o, stderr)
	}
	if rep != nil {
		if o.json {
			if jerr := rep.writeJSON(stdout); jerr != nil {
				fmt.Fprintf(stderr, "turnload: write report: %v\n", jerr)
				return 1
			}
		} else {
			rep.writeText(stdout)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "turnload: %v\n", err)
		return 1
	}
	return 0
}
