package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a config, found at a YAML path.
type Problem struct {
	// Path is where the problem is, as written in the file: "listen.udp[1]".
	Path string
	// Message says what is wrong: `"x": missing port`.
	Message string
}

// String returns "path: message".
func (p Problem) String() string { return p.Path + ": " + p.Message }

// ValidationError lists every problem Validate found, in file order.
// errors.Is(err, ErrInvalid) is true for it.
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

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Validate checks c and reports all problems at once as a *ValidationError,
// or returns nil. It checks values only: it opens no file and binds no socket.
func (c Config) Validate() error {
	var v validator
	if strings.TrimSpace(c.Realm) == "" {
		v.add("realm", "must not be empty")
	}
	c.checkListen(&v)
	c.checkTLS(&v)
	c.checkRelay(&v)
	c.checkAuth(&v)
	c.checkPeers(&v)
	c.checkLimits(&v)
	c.checkDrain(&v)
	c.checkHTTP(&v)
	c.checkLog(&v)
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
