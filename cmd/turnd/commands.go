package main

import "io"

// command runs a subcommand that parses its own flags and returns the exit
// code.
type command func(args []string, stdout, stderr io.Writer) int

// commandInfo is one line of `turnd help`.
type commandInfo struct {
	name    string
	summary string
	run     command
}

// commands lists every subcommand in the order `turnd help` shows them.
// A function, not a package variable: turnd keeps no mutable package state.
func commands() []commandInfo {
	return []commandInfo{
		{"serve", "run turnd (the default command; no --config: the embedded loopback demo config)", serveCmd},
		{"check-config", "validate a config file; exit 1 listing every problem with its YAML path and line", checkConfigCmd},
		{"default-config", "print the embedded config, a commented starting point with every key", defaultConfigCmd},
		{"import-coturn", "convert a coturn turnserver.conf (and flags) to turnd YAML", importCoturn},
		{"status", "summarise a running turnd's /status: state, allocations, traffic, drain progress", statusCmd},
		{"drain", "start a running turnd's drain (SIGTERM); --wait follows it to the end", drainCmd},
		{"upgrade", "hand a running turnd's sockets and allocations to a successor from its executable path", upgradeCmd},
		{"sessions", "list a running turnd's live allocations with their traffic; --fleet: every node's (admin token)", sessionsCmd},
		{"disconnect", "end live allocations of a user (on every node of a fleet), or one by ID, at once (admin token)",
			disconnectCmd},
		{"version", "print the version", versionCmd},
		{"help", "list the commands, or show one command's flags: turnd help COMMAND", helpCmd},
	}
}

// subcommand returns the command called name, or nil.
func subcommand(name string) command {
	for _, c := range commands() {
		if c.name == name {
			return c.run
		}
	}
	return nil
}
