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
// Validation errors are a *ValidationError listing every problem.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	if err := decode(data, &cfg); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
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
