package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Lines of turnd's text log the scenario reads.
var (
	handedOverLine = regexp.MustCompile(`msg="handed over" successor=(\d+) allocations_moved=(\d+) allocations_stayed=\d+ frozen=(\S+)`)
	tookOverLine   = regexp.MustCompile(`msg="took over" allocations=(\d+)`)
)

// readHandoverLog reads the old process's "handed over" line for h's
// successor, and the last "took over" line.
func readHandoverLog(path string, h *Handover) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read turnd log: %w", err)
	}
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if m := handedOverLine.FindStringSubmatch(l); m != nil && m[1] == strconv.Itoa(h.NewPID) {
			h.Moved, _ = strconv.Atoi(m[2])
			d, err := time.ParseDuration(m[3])
			if err != nil {
				return fmt.Errorf("handed over line %q: %w", l, err)
			}
			h.FrozenMs, found = ms(d), true
		}
		if m := tookOverLine.FindStringSubmatch(l); m != nil {
			h.TookOver, _ = strconv.Atoi(m[1])
		}
	}
	if !found {
		return fmt.Errorf("no \"handed over\" line for successor %d in %s: %w", h.NewPID, path, errParse)
	}
	return nil
}

// logPath is the file the process's output goes to.
func (p *process) logPath() string {
	if f, ok := p.cmd.Stdout.(*os.File); ok {
		return f.Name()
	}
	return ""
}
