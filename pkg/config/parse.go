package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// Load reads and parses the config file at path (see Parse). Errors name the path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		if looksLikeCoturn(data) {
			return Config{}, fmt.Errorf("config %s: %w: run `turnd import-coturn %s > turnd.yaml` to convert it",
				path, ErrCoturnFile, path)
		}
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes one YAML document over Default() and validates the result.
//
// Decoding is strict: an unknown key is an error naming the key and its line.
// A key that is left out keeps its default; an empty file means all defaults.
// A list written empty (`udp: []`) or left without a value (`udp:`) means
// none, not the default. Durations are Go duration strings ("30s", "1h30m");
// a bare number is refused because its unit would be a guess.
//
// ${NAME} in address fields is replaced from the environment (expand.go).
//
// Validation errors are a *ValidationError listing every problem.
func Parse(data []byte) (Config, error) {
	return parse(data, os.LookupEnv)
}

func parse(data []byte, lookup func(string) (string, bool)) (Config, error) {
	cfg := Default()
	ix := indexLines(data)
	// Unknown keys and wrong types do not stop decoding: what did decode is
	// validated as well, so one run reports every problem it can find.
	problems, err := decode(data, &cfg, ix)
	if err != nil {
		return Config{}, err
	}
	// A field already reported (a variable missing, a value of the wrong
	// type) is not reported again for what follows from it.
	var already []Problem
	reported := func(path string) bool {
		for _, p := range already {
			if p.Path != "" && below(path, p.Path) {
				return true
			}
		}
		return false
	}
	already = problems
	for _, p := range cfg.expandAddresses(lookup) {
		if !reported(p.Path) {
			problems = append(problems, p)
		}
	}
	already = problems
	var verr *ValidationError
	if err := cfg.Validate(); err != nil && !errors.As(err, &verr) {
		return Config{}, err
	}
	if verr != nil {
		for _, p := range verr.Problems {
			if !reported(p.Path) {
				problems = append(problems, p)
			}
		}
	}
	if len(problems) == 0 {
		return cfg, nil
	}
	for i := range problems {
		if problems[i].Line == 0 && problems[i].Path != "" {
			problems[i].Line = ix.line(problems[i].Path)
		}
	}
	// File order; what is not written in the file (a default) comes last.
	slices.SortStableFunc(problems, func(a, b Problem) int { return cmp.Compare(sortLine(a), sortLine(b)) })
	return Config{}, &ValidationError{Problems: problems}
}

func sortLine(p Problem) int {
	if p.Line == 0 {
		return math.MaxInt
	}
	return p.Line
}

// decode decodes data over cfg, which must already hold the defaults, and
// returns the unknown keys and wrongly typed values as problems; an error
// means the file could not be read as one YAML document at all.
// yaml.v3 replaces a slice as a whole and leaves unmentioned fields alone,
// which is what gives "left out means default, written empty means none".
func decode(data []byte, cfg *Config, ix lineIndex) ([]Problem, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var problems []Problem
	if err := dec.Decode(cfg); err != nil {
		var te *yaml.TypeError
		switch {
		case errors.Is(err, io.EOF):
			return nil, nil // empty file or only comments: all defaults
		case errors.As(err, &te):
			problems = explain(te, ix)
		default:
			return nil, fmt.Errorf("decode config: %w", err)
		}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return problems, nil
	case err != nil:
		return nil, fmt.Errorf("decode config: %w", err)
	default:
		return nil, fmt.Errorf("decode config: line %d: %w", extra.Line, ErrMultipleDocuments)
	}
}
