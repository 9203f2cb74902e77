package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/turnd/turnd/pkg/config"
)

// serveCmd runs turnd with --config FILE, or the embedded demo config.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	if hint := coturnFlagHint(args); hint != "" {
		fmt.Fprintln(stderr, hint)
		return 2
	}
	fs := flag.NewFlagSet("turnd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file (YAML); empty runs the embedded loopback demo config")
	takeOver := fs.Bool("take-over", false, "take over the sockets and allocations of the turnd serving handover.socket "+
		"(none there: start fresh)")
	fs.Usage = usage(fs, "turnd [serve] [--config FILE] [--take-over]",
		"Runs turnd until it has drained (SIGTERM, SIGINT or SIGUSR1 start the drain; SIGHUP reloads the file).")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	return serve(*path, *takeOver, stdout, stderr)
}

// coturnFlagHint answers coturn's -c (its config file flag) with what turnd
// does instead, since someone typing it is most likely migrating.
func coturnFlagHint(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		file, ok := "", false
		switch {
		case a == "-c" || a == "--c":
			ok = true
			if i+1 < len(args) {
				file = args[i+1]
			}
		case strings.HasPrefix(a, "-c="), strings.HasPrefix(a, "--c="):
			ok, file = true, a[strings.Index(a, "=")+1:]
		}
		if ok {
			if file == "" {
				file = "FILE"
			}
			return fmt.Sprintf("turnd: -c is coturn's flag; turnd reads its own YAML with --config FILE. "+
				"If %s is a coturn turnserver.conf, convert it: turnd import-coturn %s > turnd.yaml", file, file)
		}
	}
	return ""
}

// checkConfigCmd validates a config file and exits 1 listing every problem.
func checkConfigCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file (YAML) to validate (required)")
	fs.Usage = usage(fs, "turnd check-config --config FILE",
		"Decodes and validates FILE without starting turnd, and lists every problem at once, each with its\n"+
			"YAML path and line. Exits 0 when the file is good, 1 when it is not.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if *path == "" && fs.NArg() == 1 {
		*path = fs.Arg(0) // `turnd check-config FILE` reads as meant
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd check-config: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
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
	if cfg.ServesTLS() {
		if _, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile); err != nil {
			fmt.Fprintf(stderr, "config %s: tls: %v\n", *path, err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "%s: ok\n", *path)
	return 0
}

// defaultConfigCmd prints the embedded config.
func defaultConfigCmd(args []string, stdout, stderr io.Writer) int {
	return noFlags("default-config", "Prints the embedded config: every key with its default, commented.", args, stderr,
		func() { _, _ = stdout.Write(config.EmbeddedYAML()) })
}

// versionCmd prints the version.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	return noFlags("version", "Prints turnd's version.", args, stderr,
		func() { fmt.Fprintf(stdout, "turnd %s\n", version) })
}

// noFlags runs do for a command that takes no flags, answering --help.
func noFlags(name, about string, args []string, stderr io.Writer, do func()) int {
	fs := flag.NewFlagSet("turnd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "usage: turnd %s\n\n%s (no flags)\n", name, about) }
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	do()
	return 0
}
