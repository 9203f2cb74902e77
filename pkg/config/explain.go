package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

const durationHint = ` (write durations as Go strings such as "30s" or "1h")`

// explain turns yaml.v3's type errors into problems in the config file's
// own terms: an unknown field of Go type config.Listen becomes an unknown
// key in "listen", a value of the wrong type is named by its YAML path, and
// a duration error says how durations are written.
func explain(te *yaml.TypeError, ix lineIndex) []Problem {
	paths := sectionPaths()
	out := make([]Problem, len(te.Errors))
	for i, msg := range te.Errors {
		line, key, typ, ok := unknownField(msg)
		if ok {
			where := ""
			if p := paths[typ]; p != "" {
				where = " in " + p
			}
			out[i] = Problem{Line: lineNumber(line), Message: fmt.Sprintf("unknown key %q%s", key, where), decode: true}
			continue
		}
		p := Problem{Message: msg, decode: true}
		if l, rest, ok := strings.Cut(msg, ": "); ok && lineNumber(l) > 0 {
			p.Line, p.Message, p.Path = lineNumber(l), rest, ix.pathAt(lineNumber(l), rest)
		}
		if strings.Contains(msg, "time.Duration") {
			p.Message += durationHint
		}
		out[i] = p
	}
	return out
}

// lineNumber reads yaml.v3's "line 12"; 0 if it is not that.
func lineNumber(s string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "line "))
	if err != nil || !strings.HasPrefix(s, "line ") {
		return 0
	}
	return n
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
