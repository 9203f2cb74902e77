// Package coturnconf reads a coturn configuration — a turnserver.conf file or
// the same options given as turnserver's command-line flags — and converts it
// into an equivalent turnd configuration file.
//
// Reading follows coturn's own parser: '#' starts a comment only at the start
// of a line, a key is separated from its value by any run of spaces, tabs or
// '=', a value may be double-quoted, repeatable options accumulate and single
// ones keep their last value, and unknown keys are reported and skipped.
// Converting reports, with its line (or argument) number, every option that
// turnd cannot carry over or that behaves differently, and validates the
// result with pkg/config, so what it writes is a file `turnd check-config`
// accepts.
//
// The package knows nothing about the command line, files or output streams
// of turnd itself: it turns bytes and argument lists into YAML and findings.
// cmd/turnd decides where they go.
package coturnconf
