package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// lineIndex knows the line of each YAML path written in a file, so that a
// problem found after decoding (a validation problem, a type error that
// yaml.v3 reports by line only) can be shown with both.
type lineIndex struct {
	byPath map[string]int      // "listen.udp[1]" -> 4
	byLine map[int][]lineEntry // 4 -> the values written on that line
}

// lineEntry is a value written on a line, with its path.
type lineEntry struct {
	path  string
	value string // a scalar's text; "" for a mapping or sequence
}

// indexLines parses data as a YAML tree; a file that does not parse gives
// an empty index (its syntax error is reported on its own).
func indexLines(data []byte) lineIndex {
	ix := lineIndex{byPath: map[string]int{}, byLine: map[int][]lineEntry{}}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ix
	}
	ix.walk(doc.Content[0], "", 0)
	return ix
}

func (ix lineIndex) walk(n *yaml.Node, path string, line int) {
	if path != "" {
		ix.byPath[path] = line
		v := ""
		if n.Kind == yaml.ScalarNode {
			v = n.Value
		}
		ix.byLine[n.Line] = append(ix.byLine[n.Line], lineEntry{path, v})
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ix.walk(n.Content[i+1], p, k.Line)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			ix.walk(item, index(path, i), item.Line)
		}
	}
}

// pathAt names the value on line that yaml.v3 quoted in a type error
// ("!!str `low` into int": low, long values cut to "…..."), or the last
// value on the line when the quote does not tell (a flow mapping's values
// share a line).
func (ix lineIndex) pathAt(line int, msg string) string {
	entries := ix.byLine[line]
	if len(entries) == 0 {
		return ""
	}
	if _, rest, ok := strings.Cut(msg, "`"); ok {
		if quoted, _, ok := strings.Cut(rest, "`"); ok {
			quoted = strings.TrimSuffix(quoted, "...")
			for _, e := range entries {
				if e.value != "" && strings.HasPrefix(e.value, quoted) {
					return e.path
				}
			}
		}
	}
	return entries[len(entries)-1].path
}

// line returns the line of path, or of its nearest written parent; 0 when
// nothing of it is in the file (a default that fails validation).
func (ix lineIndex) line(path string) int {
	for p := path; p != ""; {
		if l, ok := ix.byPath[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// below reports whether path is p or lies under it (or the other way
// round): a problem there follows from one already reported at p.
func below(path, p string) bool {
	if path == p {
		return true
	}
	under := func(a, b string) bool {
		return strings.HasPrefix(a, b) && (a[len(b)] == '.' || a[len(b)] == '[')
	}
	return (len(path) > len(p) && under(path, p)) || (len(p) > len(path) && under(p, path))
}
