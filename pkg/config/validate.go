package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a config, found at a YAML path.
type Problem struct {
	// Path is where the problem is, as written in the file: "listen.udp[1]".
	// Empty when the message names the place itself (an unknown key).
	Path string
	// Message says what is wrong: `"x": missing port`.
	Message string
	// Line is the file line of Path (or of its nearest parent written in
	// the file); 0 when not known, as for a default that fails validation.
	Line int
	// decode marks a problem found while decoding (an unknown key, a wrong
	// type) rather than by Validate.
	decode bool
}

// String returns "line N: path: message", leaving out what is not known.
func (p Problem) String() string {
	s := p.Message
	if p.Path != "" {
		s = p.Path + ": " + s
	}
	if p.Line > 0 {
		s = fmt.Sprintf("line %d: %s", p.Line, s)
	}
	return s
}

// ValidationError lists every problem found in a config: decoding problems
// (unknown keys, wrong types) and Validate's together, in file order, the
// problems of defaults not written in the file last. errors.Is(err, ErrInvalid) is true for it, and errors.Is(err,
// ErrDecode) too when a key was unknown or a value of the wrong type.
type ValidationError struct {
	Problems []Problem
}

// Error returns one problem on the same line, or several one per line.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid config: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid config (%d problems):", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true, and ErrDecode when a problem
// was found while decoding.
func (e *ValidationError) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return true
	case ErrDecode:
		for _, p := range e.Problems {
			if p.decode {
				return true
			}
		}
	}
	return false
}

// Validate checks c and reports all problems at once as a *ValidationError,
// or returns nil. It checks values only: it opens no file and binds no socket.
func (c Config) Validate() error {
	var v validator
	if strings.TrimSpace(c.Realm) == "" {
		v.add("realm", "must not be empty")
	}
	c.checkListen(&v)
	c.checkProxyProtocol(&v)
	c.checkTLS(&v)
	c.checkRelay(&v)
	c.checkAuth(&v)
	c.checkPeers(&v)
	c.checkLimits(&v)
	c.checkDrain(&v)
	c.checkOffload(&v)
	c.checkHandover(&v)
	c.checkHTTP(&v)
	c.checkLog(&v)
	c.checkFleet(&v)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// validator collects problems; Validate's helpers append to it.
type validator struct {
	problems []Problem
}

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// addIf adds msg at path unless msg is empty, the convention of the check* helpers.
func (v *validator) addIf(path, msg string) {
	if msg != "" {
		v.problems = append(v.problems, Problem{Path: path, Message: msg})
	}
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }
