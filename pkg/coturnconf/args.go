package coturnconf

import (
	"fmt"
	"strings"
)

// shortWithValue lists turnserver's one-letter flags that take a value
// (getopt's "c:d:p:L:E:X:i:m:l:r:u:b:B:e:M:J:N:O:q:Q:s:C:K:A:").
const shortWithValue = "cdpLEXimlrubBeMJNOqQsCKA"

// ParseArgs reads turnserver command-line flags the way getopt_long does in
// coturn: "--name=value", "--name value" for options that require a value,
// bare "--flag", and one-letter flags ("-p 3478", "-p3478", "-af"). As with
// getopt, an option whose value is optional (--prometheus-port, the
// lifetimes) takes it only after '='. Positions in findings count the
// arguments from 1.
func ParseArgs(args []string) Input {
	var in Input
	warn := func(pos Pos, option, format string, a ...any) {
		in.Findings = append(in.Findings, Finding{Pos: pos, Option: option, Severity: Warning, Message: fmt.Sprintf(format, a...)})
	}
	var lastOptional string // an optional-value option just given without '='
	for i := 0; i < len(args); i++ {
		a, pos := args[i], Pos{Arg: i + 1}
		prevOptional := lastOptional
		lastOptional = ""
		switch {
		case strings.HasPrefix(a, "--") && len(a) > 2:
			name, value, hasValue := strings.Cut(a[2:], "=")
			sp, known := lookup(name)
			if known && sp.arg == argRequired && !hasValue {
				if i+1 >= len(args) {
					warn(pos, name, "needs a value; ignored")
					continue
				}
				i++
				value = args[i]
			}
			if known && sp.arg == argOptional && !hasValue {
				lastOptional = name
			}
			in.Options = append(in.Options, Option{Name: name, Value: value, Pos: pos})
		case strings.HasPrefix(a, "-") && len(a) > 1:
			i = in.readShort(args, i)
		default:
			hint := ""
			if prevOptional != "" {
				hint = fmt.Sprintf(" (--%s takes its value only as --%s=VALUE)", prevOptional, prevOptional)
			}
			warn(pos, "", "unexpected argument %q, ignored, as coturn does%s", a, hint)
		}
	}
	return in
}

// readShort reads the cluster of one-letter flags args[i] ("-av", "-p3478",
// "-p" followed by a value) and returns the index of the last argument used.
func (in *Input) readShort(args []string, i int) int {
	a, pos := args[i], Pos{Arg: i + 1}
	for j := 1; j < len(a); j++ {
		c := a[j]
		value := ""
		if strings.IndexByte(shortWithValue, c) >= 0 {
			switch {
			case j+1 < len(a):
				value = a[j+1:]
			case i+1 < len(args):
				i++
				value = args[i]
			default:
				in.Findings = append(in.Findings, Finding{Pos: pos, Option: "-" + string(c), Severity: Warning,
					Message: "needs a value; ignored"})
				return i
			}
			j = len(a) // the value ends the cluster
			if v, ok := strings.CutPrefix(value, "="); ok {
				in.Findings = append(in.Findings, Finding{Pos: pos, Option: "-" + string(c), Severity: Warning,
					Message: "one-letter flags take their value as -" + string(c) + " VALUE; the '=' was dropped (coturn would keep it)"})
				value = v
			}
		}
		switch c {
		case 'c':
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: "-c", Severity: Note,
				Message: "names turnserver's config file: pass that file to import-coturn itself (import-coturn FILE -- FLAGS)"})
			continue
		case 'n', 'h':
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: "-" + string(c), Severity: Note,
				Message: "only changes how turnserver starts; ignored"})
			continue
		}
		sp, ok := lookupShort(c)
		if !ok {
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: "-" + string(c), Severity: Warning,
				Message: "unknown flag, ignored (turnserver would print its usage and exit)"})
			continue
		}
		in.Options = append(in.Options, Option{Name: sp.name, Value: value, Pos: pos})
	}
	return i
}
