package coturnconf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/turnd/turnd/pkg/config"
)

// Result is a converted configuration.
type Result struct {
	// YAML is the turnd config file. Every value coturn determined carries a
	// comment naming the coturn option and its line or argument.
	YAML []byte
	// Config is YAML decoded and validated by pkg/config; the zero Config
	// when Convert returns an error.
	Config config.Config
	// Findings are the reader's and the converter's findings, ordered by
	// position: every option not carried over, or carried over with a
	// difference, is among them.
	Findings []Finding
}

// Convert turns coturn options into a turnd config. It always returns the
// findings and the YAML it wrote; the error wraps ErrInvalidResult and
// config's validation error when that YAML does not validate, which happens
// when coturn's options leave out something turnd requires (the findings
// say what).
func Convert(in Input) (Result, error) {
	c := build(in)
	res := Result{YAML: c.render(), Findings: c.findings}
	sortFindings(res.Findings)
	cfg, err := config.Parse(res.YAML)
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrInvalidResult, err)
	}
	res.Config = cfg
	return res, nil
}

// build runs every conversion step over in.
func build(in Input) *converter {
	c := newConverter(in)
	c.listen()
	c.relay()
	c.auth()
	c.peers()
	c.limits()
	c.operations()
	return c
}

// converter holds the options by name and builds the config with the
// comments that say where each value came from.
type converter struct {
	opts     map[string][]Option // known options, in order of precedence
	findings []Finding
	cfg      config.Config
	// why is the line comment of a YAML path ("relay.address"); items holds
	// one comment per list entry ("peers.denied"); head holds comment lines
	// written above a key ("drain").
	why   map[string]string
	items map[string][]string
	head  map[string][]string
	// userOrder keeps auth.users in the order the file gave them.
	userOrder []string
	// privates are the private halves of external-ip mappings, which coturn
	// adds to its peer allow-list.
	privates []mapping
}

func newConverter(in Input) *converter {
	c := &converter{
		opts:     map[string][]Option{},
		findings: append([]Finding{}, in.Findings...),
		cfg:      config.Default(),
		why:      map[string]string{},
		items:    map[string][]string{},
		head:     map[string][]string{},
	}
	c.cfg.Auth.Users = map[string]string{}
	var names []string // in order of first appearance, for stable findings
	for _, o := range in.Options {
		if _, seen := c.opts[o.Name]; !seen {
			names = append(names, o.Name)
		}
		c.collect(o)
	}
	for _, name := range names {
		os := c.opts[name]
		if sp, _ := lookup(name); !sp.repeat && len(os) > 1 {
			c.warn(os[len(os)-1], "given %d times (%s); coturn uses the last one, this one", len(os), positions(os))
		}
	}
	return c
}

// collect files a known, well-formed option under its name, or reports it.
func (c *converter) collect(o Option) {
	sp, ok := lookup(o.Name)
	switch {
	case !ok && o.Pos.Arg > 0:
		c.warn(o, "unknown option, ignored (turnserver would print its usage and exit)")
		return
	case !ok:
		c.warn(o, `unknown option, ignored (coturn logs "Bad configuration format" and skips it too)`)
		return
	case sp.arg == argRequired && strings.TrimSpace(o.Value) == "":
		c.warn(o, "has no value; ignored")
		return
	case sp.arg == argFlag:
		on, valid := parseBool(o.Value)
		if !valid {
			c.warn(o, "%q is not a boolean (coturn accepts on/off, yes/no, 1/0, true/false and refuses to start); ignored", o.Value)
			return
		}
		if !on {
			if sp.why == "" {
				c.opts[o.Name] = append(c.opts[o.Name], o) // a later "off" overrides an earlier "on"
			}
			return // switched off: nothing to carry over
		}
	}
	if sp.why != "" {
		c.add(Finding{Pos: o.Pos, Option: o.Name, Severity: sp.sev, Message: sp.why})
		return
	}
	c.opts[o.Name] = append(c.opts[o.Name], o)
}

// parseBool is coturn's get_bool_value: empty means on; it returns false
// for valid when coturn would refuse the value.
func parseBool(s string) (on, valid bool) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return true, true
	case strings.ContainsRune("0nNfF", rune(s[0])):
		return false, true
	case strings.ContainsRune("yYtT", rune(s[0])), s[0] > '0' && s[0] <= '9':
		return true, true
	case s == "off" || s == "OFF" || s == "Off":
		return false, true
	case s == "on" || s == "ON" || s == "On":
		return true, true
	}
	return false, false
}

// last returns the option that wins among a single-valued option's occurrences.
func (c *converter) last(name string) (Option, bool) {
	os := c.opts[name]
	if len(os) == 0 {
		return Option{}, false
	}
	return os[len(os)-1], true
}

// flag reports whether a boolean option is on (its last occurrence).
func (c *converter) flag(name string) (Option, bool) {
	o, ok := c.last(name)
	if !ok {
		return Option{}, false
	}
	if sp, _ := lookup(name); sp.arg == argSwitch {
		return o, true
	}
	on, _ := parseBool(o.Value)
	return o, on
}

// integer reads a number as coturn's atoi does (leading digits; none is 0).
// A valid number written with more after it is noted as read; an invalid
// one is left to the caller's single warning, which says what is used
// instead, so one line never gets a note and a warning that disagree.
func (c *converter) integer(o Option, valid func(int) bool) (int, bool) {
	s := strings.TrimLeft(o.Value, " \t")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		n = 0
	}
	if !valid(n) {
		return n, false
	}
	if end != len(s) {
		c.note(o, "read as %d, as coturn reads it (the number at the start of %q)", n, o.Value)
	}
	return n, true
}

// isPort, isCount and isPositive are the valid ranges integer checks.
func isPort(n int) bool     { return n >= 1 && n <= 65535 }
func isCount(n int) bool    { return n >= 0 }
func isPositive(n int) bool { return n > 0 }

func (c *converter) add(f Finding) { c.findings = append(c.findings, f) }

func (c *converter) warn(o Option, format string, a ...any) {
	c.add(Finding{Pos: o.Pos, Option: o.Name, Severity: Warning, Message: fmt.Sprintf(format, a...)})
}

func (c *converter) note(o Option, format string, a ...any) {
	c.add(Finding{Pos: o.Pos, Option: o.Name, Severity: Note, Message: fmt.Sprintf(format, a...)})
}

// warnAll reports a finding about an option that is absent, or about the
// configuration as a whole.
func (c *converter) warnAll(option string, sev Severity, format string, a ...any) {
	c.add(Finding{Option: option, Severity: sev, Message: fmt.Sprintf(format, a...)})
}

// src names where an option was written, for YAML comments: "realm (line 9)".
func src(o Option) string {
	if o.Pos.Arg > 0 {
		return "--" + o.Name + " (" + o.Pos.String() + ")"
	}
	return o.Name + " (" + o.Pos.String() + ")"
}

// positions lists where options were written: "lines 3, 9" or "line 3, argument 2".
func positions(os []Option) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.Pos.String()
	}
	return strings.Join(parts, ", ")
}
