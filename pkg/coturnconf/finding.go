package coturnconf

import (
	"cmp"
	"slices"
	"strconv"
)

// Pos is where an option was written: a line of the config file or a
// position among the command-line arguments (both counted from 1). The zero
// Pos means the whole configuration, e.g. for an option that was left out.
type Pos struct {
	// Line is the config file line, or 0.
	Line int
	// Arg is the command-line argument's position, or 0.
	Arg int
}

// String returns "line 12", "argument 3", or "" for the zero Pos.
func (p Pos) String() string {
	switch {
	case p.Line > 0:
		return "line " + strconv.Itoa(p.Line)
	case p.Arg > 0:
		return "argument " + strconv.Itoa(p.Arg)
	}
	return ""
}

// order sorts file lines first, then arguments (coturn reads them in that
// order), then findings about the configuration as a whole.
func (p Pos) order() (int, int) {
	switch {
	case p.Line > 0:
		return 0, p.Line
	case p.Arg > 0:
		return 1, p.Arg
	}
	return 2, 0
}

// Severity says how much a finding matters to someone migrating.
type Severity int

const (
	// Note is information: the option needs nothing in turnd, or turnd
	// always behaves that way.
	Note Severity = iota
	// Warning means something was not carried over or behaves differently
	// in turnd: read it before switching.
	Warning
)

// String returns "note" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "note"
}

// Finding is one thing the reader or the converter has to say about an
// option. Messages never repeat passwords, keys or secrets.
type Finding struct {
	// Pos is where the option was written (zero for the whole config).
	Pos Pos
	// Option is coturn's option name ("userdb"), or "" for the whole config.
	Option string
	// Severity is Note or Warning.
	Severity Severity
	// Message says what happened and what to do, in one sentence or two.
	Message string
}

// String returns "line 12: warning: userdb: not supported: ...", leaving
// out the parts that are empty.
func (f Finding) String() string {
	s := ""
	if p := f.Pos.String(); p != "" {
		s = p + ": "
	}
	s += f.Severity.String() + ": "
	if f.Option != "" {
		s += f.Option + ": "
	}
	return s + f.Message
}

// sortFindings orders findings by position, keeping the order in which they
// were made for findings at the same position.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		ga, na := a.Pos.order()
		gb, nb := b.Pos.order()
		return cmp.Or(cmp.Compare(ga, gb), cmp.Compare(na, nb))
	})
}
