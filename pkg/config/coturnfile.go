package config

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// coturnLine is coturn's option syntax: "name", "name=value" or
// "name value", with a lower-case hyphenated name and no YAML colon.
var coturnLine = regexp.MustCompile(`^[a-z][a-z0-9-]*(\s*=.*|\s+.*)?$`)

// looksLikeCoturn reports whether data reads as a coturn turnserver.conf:
// every line an option or a comment, and at least one that YAML would not
// mistake for a word (a hyphenated name or a name=value). Only a file that
// failed to load as turnd's YAML is asked, so a hint never hides a real
// turnd config's problems.
func looksLikeCoturn(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	options := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if !coturnLine.MatchString(line) {
			return false
		}
		name := strings.Fields(strings.ReplaceAll(line, "=", " "))[0]
		if strings.Contains(name, "-") || strings.Contains(line, "=") {
			options++
		}
	}
	return options > 0
}
