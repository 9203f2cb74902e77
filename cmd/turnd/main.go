// Command turnd is a TURN server (RFC 8656) that drains gracefully by
// itself: SIGTERM stops new allocations, keeps every live relay working, and
// exits the moment the last one ends or the drain deadline passes.
//
// Usage:
//
//	turnd [--config FILE]                 run (no flag: the embedded loopback demo config)
//	turnd check-config --config FILE      validate a file; non-zero exit lists every problem
//	turnd default-config                  print the embedded config, a commented starting point
//	turnd version                         print the version
//	turnd import-coturn FILE [-- FLAGS]   convert a coturn turnserver.conf (and flags) to turnd YAML
//	turnd status [--http ADDR] [--json]   summarise a running turnd's /status
//	turnd drain [--pid N] [--wait]        SIGTERM a running turnd; --wait follows the drain to its end
//	turnd upgrade [--pid N]               hand a running turnd's sockets and allocations to a successor
//	turnd sessions [--user U] [--fleet]   list a running turnd's live allocations, or every node's (admin token)
//	turnd disconnect --user U | --id ID   end live allocations at once, a user's on every node (admin token)
//	turnd help [COMMAND]                  list the commands, or one command's flags
package main

import (
	"io"
	"os"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches a command line and returns the exit code. A line that
// starts with a flag runs serve with it, so `turnd --config FILE` works.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return serveCmd(nil, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printHelp(stdout)
		return 0
	case "-version", "--version":
		return versionCmd(nil, stdout, stderr)
	}
	if args[0] != "" && args[0][0] == '-' {
		return serveCmd(args, stdout, stderr)
	}
	sub := subcommand(args[0])
	if sub == nil {
		unknownCommand(stderr, args[0])
		return 2
	}
	return sub(args[1:], stdout, stderr)
}
