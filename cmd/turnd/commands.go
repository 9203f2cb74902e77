package main

import "io"

// command runs a subcommand that parses its own flags and returns the exit
// code.
type command func(args []string, stdout, stderr io.Writer) int

// subcommand returns the subcommands with flags of their own (operator
// tools that talk to a running turnd or convert files), or nil. serve,
// check-config, default-config and version share run's --config flag.
func subcommand(name string) command {
	switch name {
	case "import-coturn":
		return importCoturn
	case "status":
		return statusCmd
	case "drain":
		return drainCmd
	}
	return nil
}
