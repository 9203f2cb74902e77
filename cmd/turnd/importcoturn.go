package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/turnd/turnd/pkg/coturnconf"
)

const importUsage = `usage: turnd import-coturn [FILE | -] [-- TURNSERVER-FLAGS...]

Reads a coturn turnserver.conf (FILE, or - for stdin) and/or the same options
as turnserver command-line flags after --, and writes the equivalent turnd
config to stdout. Flags override the file's single-valued options, as in
coturn. Every option that is not carried over, or behaves differently, is
reported on stderr with its line or argument number.

  turnd import-coturn /etc/turnserver.conf > /etc/turnd/turnd.yaml
  turnd import-coturn /etc/turnserver.conf -- --relay-ip=192.0.2.10
  turnd import-coturn -- --listening-port=3478 --user=alice:secret --realm=example.org
`

// importCoturn converts coturn options to a turnd config on stdout. It
// exits 0 when it wrote a config that validates (warnings or not), 1 when
// the options leave out something turnd needs, 2 on a usage error.
func importCoturn(args []string, stdout, stderr io.Writer) int {
	file, flags, err := splitImportArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "turnd import-coturn: %v\n\n%s", err, importUsage)
		return 2
	}
	if file == "help" {
		fmt.Fprint(stdout, importUsage)
		return 0
	}
	var in coturnconf.Input
	if file != "" {
		if in, err = readCoturnFile(file); err != nil {
			fmt.Fprintf(stderr, "turnd import-coturn: %v\n", err)
			return 1
		}
	}
	if flags != nil {
		in = in.Then(coturnconf.ParseArgs(flags))
	}
	res, err := coturnconf.Convert(in)
	warnings := 0
	for _, f := range res.Findings {
		if f.Severity == coturnconf.Warning {
			warnings++
		}
		fmt.Fprintln(stderr, f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "turnd import-coturn: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(res.YAML); err != nil {
		fmt.Fprintf(stderr, "turnd import-coturn: write: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "turnd import-coturn: wrote a turnd config that validates; %s, %s above\n",
		plural(warnings, "warning"), plural(len(res.Findings)-warnings, "note"))
	return 0
}

// splitImportArgs returns the file (or "help") and the turnserver flags
// after "--" (nil when there is no "--").
func splitImportArgs(args []string) (file string, flags []string, err error) {
	for i, a := range args {
		switch {
		case a == "--":
			flags = append([]string{}, args[i+1:]...)
			if file == "" && len(flags) == 0 {
				return "", nil, errors.New("nothing to convert")
			}
			return file, flags, nil
		case a == "-h" || a == "-help" || a == "--help":
			return "help", nil, nil
		case file != "":
			return "", nil, fmt.Errorf("one file only, got %q and %q (turnserver flags go after --)", file, a)
		case len(a) > 1 && a[0] == '-':
			return "", nil, fmt.Errorf("unknown flag %q (turnserver flags go after --)", a)
		default:
			file = a
		}
	}
	if file == "" {
		return "", nil, errors.New("nothing to convert")
	}
	return file, nil, nil
}

// readCoturnFile parses a coturn config file, or stdin for "-".
func readCoturnFile(name string) (coturnconf.Input, error) {
	if name == "-" {
		return coturnconf.ParseFile(os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return coturnconf.Input{}, fmt.Errorf("open coturn config: %w", err)
	}
	defer f.Close()
	in, err := coturnconf.ParseFile(f)
	if err != nil {
		return coturnconf.Input{}, fmt.Errorf("%s: %w", name, err)
	}
	return in, nil
}
