package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/turnd/turnd/internal/handover"
	"github.com/turnd/turnd/pkg/config"
)

// upgradeCmd asks a running turnd to hand its sockets and allocations to a
// successor it starts from its own executable path, and waits for the
// outcome: the new PID (exit 0), or why nothing changed (exit 1).
func upgradeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pidFlag := fs.Int("pid", 0, "process ID of the turnd to upgrade")
	pidFile := fs.String("pidfile", "", "read the process ID from this file (turnd's pidfile)")
	cfgPath := fs.String("config", "", "turnd config: its handover.socket (else its pidfile) names the process")
	wait := fs.Duration("timeout", 0, "give up after this long (default: handover.timeout of --config, else 10s, plus 5s)")
	fs.Usage = usage(fs, "turnd upgrade [--pid N | --pidfile F | --config FILE]",
		"Has a running turnd start the executable now at its path, with its own arguments, and hand it every\n"+
			"socket and live allocation; TLS clients stay with the old process until they end. Prints the new PID.\n"+
			"A successor that fails changes nothing: the old process serves on.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd upgrade: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var cfg *config.Config
	timeout := config.Default().Handover.Timeout
	if *cfgPath != "" {
		c, err := config.Load(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "turnd upgrade: %v\n", err)
			return 1
		}
		cfg, timeout = &c, c.Handover.Timeout
	}
	if *wait > 0 {
		timeout = *wait
	} else {
		timeout += 5 * time.Second // the old process's own timeout answers first
	}
	addr, pid, err := upgradeTarget(*pidFlag, *pidFile, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "turnd upgrade: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := handover.Dial(ctx, addr)
	if err != nil {
		fmt.Fprintf(stderr, "turnd upgrade: %v (is turnd running?)\n", err)
		return 1
	}
	defer c.Close()
	newPID, err := handover.RequestUpgrade(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "turnd upgrade: %v\n", err)
		return 1
	}
	if pid > 0 {
		fmt.Fprintf(stdout, "turnd upgraded: pid %d serves, pid %d drains what could not move and exits\n", newPID, pid)
	} else {
		fmt.Fprintf(stdout, "turnd upgraded: pid %d serves\n", newPID)
	}
	fmt.Fprintln(stdout, newPID)
	return 0
}

// upgradeTarget is the hand-over socket to ask: the config's
// handover.socket, else the abstract socket of the process --pid,
// --pidfile or the config's pidfile names.
func upgradeTarget(pid int, pidFile string, cfg *config.Config) (addr string, _ int, _ error) {
	if pid == 0 && pidFile == "" && cfg != nil && cfg.Handover.Socket != "" {
		return cfg.Handover.Socket, 0, nil
	}
	n, err := resolvePID(pid, pidFile, cfg)
	if err != nil {
		return "", 0, err
	}
	if err := checkTurnd(n); err != nil && !errors.Is(err, errNotTurnd) {
		return "", 0, err
	}
	return pidSocket(n), n, nil
}

// pidSocket is the abstract socket every turnd answers upgrades on: named
// after its PID, so `turnd upgrade --pid N` needs no config.
func pidSocket(pid int) string { return "@turnd/pid/" + strconv.Itoa(pid) }
