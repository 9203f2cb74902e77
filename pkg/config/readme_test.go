package config

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// yamlBlock is a fenced ```yaml block of a Markdown file, indented too (in a
// list item); YAML reads a uniformly indented mapping as it is.
var yamlBlock = regexp.MustCompile("(?ms)^[ \t]*```yaml\n(.*?)^[ \t]*```")

// TestReadmeExamples loads every YAML block of the README: the full config,
// the fragments (a peers section) and the set-ups (behind NAT). Decoding is
// strict, so a renamed key fails here; a fragment that names no credentials
// is given a user, so only what it shows is judged.
func TestReadmeExamples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlock.FindAllSubmatch(data, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d YAML blocks in README.md, want at least 3 (config, peers, behind NAT)", len(blocks))
	}
	for i, b := range blocks {
		text := b[1]
		cfg := Default()
		problems, err := decode(text, &cfg, indexLines(text))
		if err != nil || problems != nil {
			t.Errorf("README YAML block %d does not decode: %v %v\n%s", i+1, err, problems, text)
			continue
		}
		if len(cfg.Auth.Users) == 0 && len(cfg.Auth.Secrets) == 0 {
			cfg.Auth.Users = map[string]string{"example": "example"}
		}
		if p := cfg.expandAddresses(podEnv); p != nil {
			t.Errorf("README YAML block %d: %v", i+1, p)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("README YAML block %d does not validate: %v\n%s", i+1, err, text)
		}
	}
}
