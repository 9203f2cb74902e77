package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: the config loader takes operator files and SIGHUP reloads of
// them; no input may panic it, and whatever it accepts must validate.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add(EmbeddedYAML())
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse(data, func(string) (string, bool) { return "192.0.2.1", true })
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
	})
}
