package main

import (
	"fmt"
	"io"
	"strings"
)

// printHelp lists the commands, one line each.
func printHelp(w io.Writer) {
	fmt.Fprint(w, `turnd is a TURN server (RFC 8656) that drains by itself on SIGTERM.

usage: turnd [COMMAND] [FLAGS]

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
"turnd --config FILE" runs a config file; "turnd help COMMAND" or "turnd COMMAND --help" shows a command's flags.
`)
}

// helpCmd is `turnd help [COMMAND]`: the list, or that command's own usage.
// Help that was asked for goes to stdout and exits 0.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printHelp(stdout)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "turnd help: one command at a time, got %q\n", args)
		return 2
	}
	if args[0] == "help" || strings.HasPrefix(args[0], "-") {
		printHelp(stdout)
		return 0
	}
	sub := subcommand(args[0])
	if sub == nil {
		unknownCommand(stderr, args[0])
		return 2
	}
	return sub([]string{"--help"}, stdout, stdout)
}

// unknownCommand says so and names the nearest command, if one is close.
func unknownCommand(w io.Writer, name string) {
	msg := fmt.Sprintf("turnd: unknown command %q", name)
	if near := nearestCommand(name); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	fmt.Fprintln(w, msg+` (see "turnd help")`)
}

// nearestCommand is the command within a few edits of name (a typo), or a
// command that starts with it, or "".
func nearestCommand(name string) string {
	best, bestDist := "", len(name)/2+2
	for _, c := range commands() {
		if strings.HasPrefix(c.name, name) && len(name) >= 2 {
			return c.name
		}
		if d := editDistance(name, c.name); d < bestDist {
			best, bestDist = c.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
