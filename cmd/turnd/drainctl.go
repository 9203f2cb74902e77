package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/httpapi"
)

// drainCmd sends SIGTERM to a running turnd, which starts its drain, and
// with --wait follows the drain until the process has exited.
func drainCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pidFlag := fs.Int("pid", 0, "process ID of the turnd to drain")
	pidFile := fs.String("pidfile", "", "read the process ID from this file (turnd's pidfile)")
	cfgPath := fs.String("config", "", "turnd config: its pidfile names the process, its http.address the /status to follow")
	httpAddr := fs.String("http", "", "turnd's HTTP address for /status (default: from --config, else "+defaultHTTP+")")
	wait := fs.Bool("wait", false, "show the drain's progress until turnd has exited, then a summary")
	force := fs.Bool("force", false, "signal the process even if it does not look like turnd")
	fs.Usage = usage(fs, "turnd drain [--pid N | --pidfile F | --config FILE] [--http ADDR] [--wait]",
		"Sends SIGTERM to a running turnd (SIGUSR1 is equivalent): it refuses new allocations, keeps live ones\n"+
			"relaying and exits when they end or at its drain deadline. --wait shows the progress until it has exited.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd drain: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "turnd drain: %v\n", err)
		return 1
	}
	var cfg *config.Config
	if *cfgPath != "" {
		c, err := config.Load(*cfgPath)
		if err != nil {
			return fail(err)
		}
		cfg = &c
	}
	pid, err := resolvePID(*pidFlag, *pidFile, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "turnd drain: %v\n", err)
		return 2
	}
	if !*force {
		if err := checkTurnd(pid); err != nil {
			return fail(err)
		}
	}
	addr, addrErr := httpTarget(*httpAddr, *cfgPath)
	client := &http.Client{Timeout: requestTimeout}
	fetch := func() (httpapi.Status, error) {
		if addrErr != nil {
			return httpapi.Status{}, addrErr
		}
		_, st, err := fetchStatus(client, addr)
		return st, err
	}

	sent := time.Now()
	before, beforeErr := fetch()
	atStart := -1
	switch {
	case beforeErr == nil && before.State != "serving":
		// A second SIGTERM would stop turnd at once and close live calls.
		fmt.Fprintf(stdout, "turnd (pid %d) is already %s; not signalling it again (a second SIGTERM stops it at once)\n",
			pid, before.State)
		if before.Drain != nil {
			sent = before.Drain.StartedAt
		}
	default:
		if err := unix.Kill(pid, unix.SIGTERM); err != nil {
			return fail(fmt.Errorf("signal pid %d: %w", pid, err))
		}
		if beforeErr == nil {
			atStart = before.Allocations.Total
		}
		fmt.Fprintf(stdout, "sent SIGTERM to turnd (pid %d): it refuses new allocations, keeps live ones relaying and "+
			"exits when they end or at its drain deadline (SIGUSR1 does the same)\n", pid)
	}
	if !*wait {
		return 0
	}

	ticker := time.NewTicker(watchInterval)
	defer ticker.Stop()
	w := &drainWatch{
		pid: pid, alive: func() bool { return processAlive(pid) }, fetch: fetch, now: time.Now,
		tick: ticker.C, out: stdout, tty: isTerminal(stdout),
		fallback: sent.Add(fallbackDrain(cfg)),
	}
	sum, err := w.run(sent, atStart)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, sum)
	return 0
}

// resolvePID reads the process ID from --pid, else --pidfile, else the
// pidfile named in --config.
func resolvePID(pid int, pidFile string, cfg *config.Config) (int, error) {
	switch {
	case pid != 0 && pidFile != "":
		return 0, errors.New("give --pid or --pidfile, not both")
	case pid < 0:
		return 0, fmt.Errorf("--pid %d: not a process ID", pid)
	case pid > 0:
		return pid, nil
	case pidFile == "" && cfg == nil:
		return 0, errors.New("which turnd? give --pid, --pidfile or --config")
	case pidFile == "" && cfg.PIDFile == "":
		return 0, errors.New("the config sets no pidfile: give --pid or --pidfile")
	case pidFile == "":
		pidFile = cfg.PIDFile
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("read pidfile: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("pidfile %s: %q is not a process ID", pidFile, strings.TrimSpace(string(data)))
	}
	return n, nil
}

// checkTurnd refuses a process whose name is not turnd's: pidfiles outlive
// crashes, and their number may belong to another process by now. Without
// /proc (not Linux) there is nothing to check.
func checkTurnd(pid int) error {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, statErr := os.Stat("/proc/self"); statErr != nil {
			return nil
		}
		return fmt.Errorf("no process %d (is turnd running?)", pid)
	case err != nil:
		return fmt.Errorf("check pid %d: %w", pid, err)
	}
	if name := strings.TrimSpace(string(comm)); !strings.Contains(name, "turnd") {
		return fmt.Errorf("pid %d is %q: %w (a stale pidfile?); --force signals it anyway", pid, name, errNotTurnd)
	}
	return nil
}

// processAlive reports whether pid still runs. A zombie (exited, not yet
// reaped by its parent) counts as exited: it relays nothing any more.
func processAlive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// Field 3 is the state; field 2, the name, is in parentheses and may
	// hold spaces, so look after its closing one.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// fallbackDrain is how long a drain may take when /status does not say:
// the config's delay + timeout, else turnd's default timeout.
func fallbackDrain(cfg *config.Config) time.Duration {
	if cfg != nil {
		return cfg.Drain.Delay + cfg.Drain.Timeout
	}
	return config.Default().Drain.Timeout
}

// isTerminal reports whether w is a terminal, where progress may be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
