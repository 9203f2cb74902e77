package config

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestShippedExamples loads every turnd config shipped under the repo's
// deploy/ and docs/ directories, so documentation cannot drift from the
// code. A file counts as a turnd config when its name contains "turnd" or it
// lives under deploy/examples/ or deploy/systemd/; Helm templates are Go
// templates, not configs, and are skipped.
func TestShippedExamples(t *testing.T) {
	root := repoRoot(t)
	found := 0
	for _, dir := range []string{"deploy", "docs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if isHelmTemplates(rel) {
					return filepath.SkipDir
				}
				return nil
			}
			if !isTurndConfig(rel) {
				return nil
			}
			t.Run(rel, func(t *testing.T) {
				found += loadExample(t, path)
			})
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
	if found == 0 {
		t.Fatal("found no shipped example config under deploy/ or docs/: the walk or the selection is wrong")
	}
	t.Logf("loaded %d shipped example configs", found)
}

// loadExample loads a shipped file and returns how many configs it held. A
// Kubernetes manifest (a document with apiVersion) is not a turnd config
// itself, but the *.yaml entries of its ConfigMaps are, and are loaded.
func loadExample(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := manifests(data)
	if len(docs) == 0 {
		if _, err := parse(data, podEnv); err != nil {
			t.Errorf("shipped example does not load: %v", err)
		}
		return 1
	}
	n := 0
	for _, m := range docs {
		if m.Kind != "ConfigMap" {
			continue
		}
		for name, text := range m.Data {
			if filepath.Ext(name) != ".yaml" && filepath.Ext(name) != ".yml" {
				continue
			}
			n++
			if _, err := parse([]byte(text), podEnv); err != nil {
				t.Errorf("ConfigMap %s, key %s does not load: %v", m.Metadata.Name, name, err)
			}
		}
	}
	return n
}

type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
}

// manifests returns the documents of data if it is a Kubernetes manifest
// file, or nil if it is not one.
func manifests(data []byte) []manifest {
	var out []manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || m.APIVersion == "" {
			return nil // not a manifest: let Parse report what is wrong
		}
		out = append(out, m)
	}
	return out
}

// isHelmTemplates matches deploy/helm/<chart>/templates.
func isHelmTemplates(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 4 && parts[0] == "deploy" && parts[1] == "helm" && parts[3] == "templates"
}

func isTurndConfig(rel string) bool {
	ext := filepath.Ext(rel)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	return strings.Contains(filepath.Base(rel), "turnd") ||
		strings.HasPrefix(rel, "deploy/examples/") ||
		strings.HasPrefix(rel, "deploy/systemd/")
}

// repoRoot finds the module root (the directory holding go.mod) above the
// package directory the test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func TestExampleSelection(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"deploy/examples/minimal.yaml", true},
		{"deploy/systemd/turnd.yaml", true},
		{"deploy/systemd/config.yml", true},
		{"docs/turnd-tls.yaml", true},
		{"docs/turnd.example.yaml", true},
		{"docs/prometheus-rules.yaml", false},
		{"deploy/helm/turnd/values.yaml", false},
		{"deploy/helm/turnd/Chart.yaml", false},
		{"deploy/examples/README.md", false},
		{"deploy/kubernetes/turnd-deployment.yaml", true},
	}
	for _, tt := range tests {
		if got := isTurndConfig(tt.rel); got != tt.want {
			t.Errorf("isTurndConfig(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
	if !isHelmTemplates("deploy/helm/turnd/templates") || isHelmTemplates("deploy/helm/turnd") {
		t.Error("isHelmTemplates matches the wrong directories")
	}
}

func TestLoadExampleReadsConfigMaps(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "turnd.yaml")
	k8s := filepath.Join(dir, "turnd-k8s.yaml")
	files := map[string]string{
		plain: "auth: {users: {a: b}}\n",
		k8s: `apiVersion: apps/v1
kind: Deployment
metadata: {name: turnd}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: turnd}
data:
  turnd.yaml: |
    auth:
      secrets: ["s"]
  notes.txt: not a config
`,
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := loadExample(t, plain); n != 1 {
		t.Errorf("plain file: loaded %d configs, want 1", n)
	}
	if n := loadExample(t, k8s); n != 1 {
		t.Errorf("manifest: loaded %d configs, want 1 (the ConfigMap entry)", n)
	}
}

// podEnv is the environment the Helm chart gives turnd (the downward API's
// node address and name), so chart-shaped examples load as they would in a pod.
func podEnv(name string) (string, bool) {
	switch name {
	case "TURND_NODE_IP":
		return "192.0.2.10", true
	case "TURND_NODE_NAME":
		return "node-a", true
	}
	return "", false
}
