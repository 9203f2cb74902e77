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
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/turnd/turnd/pkg/config"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches a command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if sub := subcommand(cmd); sub != nil {
		return sub(args, stdout, stderr)
	}
	fs := flag.NewFlagSet("turnd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file (YAML); empty runs the embedded loopback demo config")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch cmd {
	case "serve":
		return serve(*path, stdout, stderr)
	case "check-config":
		if *path == "" {
			fmt.Fprintln(stderr, "turnd check-config: --config FILE is required")
			return 2
		}
		cfg, err := config.Load(*path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		// Validation opens no file; a certificate that will not load is
		// still something check-config should catch before a restart does.
		if len(cfg.Listen.TLS) > 0 {
			if _, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile); err != nil {
				fmt.Fprintf(stderr, "config %s: tls: %v\n", *path, err)
				return 1
			}
		}
		fmt.Fprintf(stdout, "%s: ok\n", *path)
		return 0
	case "default-config":
		_, _ = stdout.Write(config.EmbeddedYAML())
		return 0
	case "version":
		fmt.Fprintf(stdout, "turnd %s\n", version)
		return 0
	default:
		fmt.Fprintf(stderr, "turnd: unknown command %q (serve, check-config, default-config, version, import-coturn, status, drain)\n", cmd)
		return 2
	}
}
