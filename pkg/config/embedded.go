package config

import (
	_ "embed"
	"fmt"
)

// defaultYAML is the configuration turnd runs with when no --config is given.
//
//go:embed default.yaml
var defaultYAML []byte

// Embedded returns the parsed embedded default configuration: UDP and TCP on
// 127.0.0.1:3478, HTTP on 127.0.0.1:9641, realm turnd.local, one demo user
// (demo/demo), loopback peers allowed and relay ports 61000-65535 (outside
// the kernel's usual ephemeral range, so a first start warns of nothing), so
// it works out of the box against a local echo peer and is useless beyond
// this machine.
func Embedded() Config {
	cfg, err := Parse(defaultYAML)
	if err != nil {
		// The file is compiled in and TestEmbedded parses it, so this is a
		// build defect, not a runtime condition a caller could handle.
		panic(fmt.Sprintf("embedded default.yaml is invalid: %v", err))
	}
	return cfg
}

// EmbeddedYAML returns a copy of the embedded default configuration file,
// comments included, so it can be printed as a starting point.
func EmbeddedYAML() []byte {
	return append([]byte(nil), defaultYAML...)
}
