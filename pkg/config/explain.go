package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

const durationHint = ` (write durations as Go strings such as "30s" or "1h")`

// explain rewrites yaml.v3's type errors in the config file's own terms: an
// unknown field of Go type config.Listen becomes an unknown key in "listen",
// and a duration error says how durations are written.
func explain(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	paths := sectionPaths()
	out := make([]string, len(te.Errors))
	for i, msg := range te.Errors {
		line, key, typ, ok := unknownField(msg)
		switch {
		case ok:
			where := ""
			if p := paths[typ]; p != "" {
				where = " in " + p
			}
			out[i] = fmt.Sprintf("%s: unknown key %q%s", line, key, where)
		case strings.Contains(msg, "time.Duration"):
			out[i] = msg + durationHint
		default:
			out[i] = msg
		}
	}
	return &yaml.TypeError{Errors: out}
}

// unknownField picks apart yaml.v3's wording for an unknown key under
// KnownFields(true): "line 3: field udpp not found in type config.Listen".
func unknownField(msg string) (line, key, typ string, ok bool) {
	line, rest, ok := strings.Cut(msg, ": field ")
	if !ok || !strings.HasPrefix(line, "line ") {
		return "", "", "", false
	}
	key, typ, ok = strings.Cut(rest, " not found in type ")
	return line, key, typ, ok
}

// sectionPaths maps the Go type name of each section struct ("config.Listen")
// to its YAML path ("listen"). Each section type is used at one path only.
func sectionPaths() map[string]string {
	paths := map[string]string{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for f := range t.Fields() {
			if f.Type.Kind() != reflect.Struct {
				continue
			}
			p := prefix + yamlName(f)
			paths[f.Type.String()] = p
			walk(f.Type, p+".")
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return paths
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}
