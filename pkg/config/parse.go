package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

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
	if err := decode(data, &cfg); err != nil {
		return Config{}, err
	}
	problems := cfg.expandAddresses(lookup)
	var verr *ValidationError
	if err := cfg.Validate(); err != nil && !errors.As(err, &verr) {
		return Config{}, err
	}
	if verr != nil {
		// A field whose variable is missing is reported once, for that reason.
		bad := map[string]bool{}
		for _, p := range problems {
			bad[p.Path] = true
		}
		for _, p := range verr.Problems {
			if !bad[p.Path] {
				problems = append(problems, p)
			}
		}
	}
	if len(problems) > 0 {
		return Config{}, &ValidationError{Problems: problems}
	}
	return cfg, nil
}

// decode decodes data over cfg, which must already hold the defaults.
// yaml.v3 replaces a slice as a whole and leaves unmentioned fields alone,
// which is what gives "left out means default, written empty means none".
func decode(data []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file or only comments: all defaults
		}
		return fmt.Errorf("decode config: %w", explain(err))
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("decode config: %w", err)
	default:
		return fmt.Errorf("decode config: line %d: %w", extra.Line, ErrMultipleDocuments)
	}
}
