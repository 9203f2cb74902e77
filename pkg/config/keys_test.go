package config

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// keyPaths lists the YAML path of every key Config has, sections included
// ("listen", "listen.udp", ...). Maps such as auth.users are leaves.
func keyPaths(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		p := prefix + yamlName(f)
		out = append(out, p)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, keyPaths(f.Type, p+".")...)
		}
	}
	return out
}

// filePaths lists the YAML paths of the keys written in a document,
// without descending into maps that are values of a leaf (auth.users).
func filePaths(n *yaml.Node, prefix string, leaves map[string]bool) []string {
	if n.Kind == yaml.DocumentNode {
		return filePaths(n.Content[0], prefix, leaves)
	}
	var out []string
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := prefix + n.Content[i].Value
		out = append(out, p)
		if !leaves[p] {
			out = append(out, filePaths(n.Content[i+1], p+".", leaves)...)
		}
	}
	return out
}

// TestFullExampleHasEveryKey keeps full.good.yaml complete: a field added
// to Config must be added there too.
func TestFullExampleHasEveryKey(t *testing.T) {
	data, err := os.ReadFile("testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	have := filePaths(&doc, "", map[string]bool{"auth.users": true})
	for _, p := range keyPaths(reflect.TypeFor[Config](), "") {
		if !slices.Contains(have, p) {
			t.Errorf("testdata/full.good.yaml lacks %s", p)
		}
	}
}
