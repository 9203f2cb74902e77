package coturnconf

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/turnd/turnd/pkg/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenCase is one coturn configuration under testdata/: NAME.conf and/or
// NAME.args (one argument per line, given after the file's options).
type goldenCase struct {
	name, conf, args string
}

// goldenCases lists testdata's configurations.
func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*goldenCase{}
	var names []string
	for _, f := range files {
		ext := filepath.Ext(f)
		if ext != ".conf" && ext != ".args" {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ext)
		gc := byName[name]
		if gc == nil {
			gc = &goldenCase{name: name}
			byName[name] = gc
			names = append(names, name)
		}
		if ext == ".conf" {
			gc.conf = f
		} else {
			gc.args = f
		}
	}
	slices.Sort(names)
	out := make([]goldenCase, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	if len(out) < 5 {
		t.Fatalf("only %d golden cases found", len(out))
	}
	return out
}

// input reads a case the way `turnd import-coturn FILE -- ARGS` does.
func (gc goldenCase) input(t *testing.T) Input {
	t.Helper()
	var in Input
	if gc.conf != "" {
		f, err := os.Open(gc.conf)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if in, err = ParseFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if gc.args != "" {
		data, err := os.ReadFile(gc.args)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				args = append(args, l)
			}
		}
		in = in.Then(ParseArgs(args))
	}
	return in
}

// TestGolden converts every configuration under testdata/ and compares the
// YAML (NAME.yaml), the findings (NAME.findings) and, for configurations
// turnd cannot take as they are, the error (NAME.error). Run with -update
// to rewrite them after a deliberate change, then review the diff.
func TestGolden(t *testing.T) {
	for _, gc := range goldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			res, err := Convert(gc.input(t))
			var findings bytes.Buffer
			for _, f := range res.Findings {
				findings.WriteString(f.String() + "\n")
			}
			golden(t, gc.name+".findings", findings.Bytes())
			if err != nil {
				if !errors.Is(err, ErrInvalidResult) {
					t.Fatalf("error %v does not wrap ErrInvalidResult", err)
				}
				golden(t, gc.name+".error", []byte(err.Error()+"\n"))
				noFile(t, gc.name+".yaml")
				return
			}
			golden(t, gc.name+".yaml", res.YAML)
			noFile(t, gc.name+".error")
			if _, err := config.Parse(res.YAML); err != nil {
				t.Fatalf("converted config does not parse: %v", err)
			}
		})
	}
}

// TestRenderRoundTrip checks the hand-written YAML against what the
// converter built: decoding it must give exactly that config.
func TestRenderRoundTrip(t *testing.T) {
	for _, gc := range goldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			c := build(gc.input(t))
			cfg, err := config.Parse(c.render())
			if err != nil {
				var verr *config.ValidationError
				if !errors.As(err, &verr) {
					t.Fatalf("rendered YAML does not decode: %v", err)
				}
				return // invalid on purpose (see TestGolden); decoding worked
			}
			want, _ := yaml.Marshal(c.cfg)
			got, _ := yaml.Marshal(cfg)
			if !bytes.Equal(got, want) {
				t.Errorf("decoded config differs from the converter's:\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update and review the diff):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func noFile(t *testing.T, name string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		_ = os.Remove(path)
		return
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("stale golden file %s (run go test -update)", path)
	}
}
