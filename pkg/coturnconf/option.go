package coturnconf

// Option is one coturn option as it was written.
type Option struct {
	// Name is the long option name without leading dashes ("listening-ip").
	Name string
	// Value is the value as coturn reads it: surrounding blanks and one pair
	// of double quotes removed. Empty for a bare flag.
	Value string
	// Pos is where the option was written.
	Pos Pos
}

// Input is what was read from a coturn config file and/or command line: the
// options in the order coturn applies them, and what could not be read.
type Input struct {
	// Options are in order of precedence: for a single-valued option the
	// last one wins, as in coturn.
	Options []Option
	// Findings report unreadable lines and arguments.
	Findings []Finding
}

// Then returns in followed by more. coturn applies a config file first and
// its command-line flags after, so flags override the file's single-valued
// options; ParseFile(...).Then(ParseArgs(...)) keeps that order.
func (in Input) Then(more Input) Input {
	return Input{
		Options:  append(append([]Option{}, in.Options...), more.Options...),
		Findings: append(append([]Finding{}, in.Findings...), more.Findings...),
	}
}
