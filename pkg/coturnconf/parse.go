package coturnconf

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// maxLine is the longest line coturn reads (its buffer is 1 KiB); longer
// lines are split by fgets, which no real config relies on. turnd reads up
// to 64 KiB so that a long secret is not silently cut.
const maxLine = 64 << 10

// ParseFile reads a turnserver.conf the way coturn's read_config_file does:
//
//   - a line whose first non-blank character is '#' is a comment, and so is a
//     blank line; there are no trailing comments ("realm=a # b" has the value
//     "a # b"), which ParseFile points out;
//   - the key ends at the first space, tab or '='; any run of those follows;
//     the rest of the line, without trailing blanks, is the value;
//   - a value starting with '"' loses it and a matching final '"';
//   - a leading "--" on the key is accepted (coturn itself would log "Bad
//     configuration format" and skip such a line, which ParseFile says).
//
// Unknown keys are kept as options; Convert reports and skips them, as
// coturn does. Only an I/O error is returned as an error.
func ParseFile(r io.Reader) (Input, error) {
	var in Input
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), " \t\r\n\v\f")
		text = strings.TrimLeft(text, " \t")
		if text == "" || text[0] == '#' {
			continue
		}
		pos := Pos{Line: line}
		name, value := splitKeyValue(text)
		if strings.HasPrefix(name, "--") {
			name = strings.TrimPrefix(name, "--")
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: name, Severity: Warning,
				Message: `coturn does not strip "--" in a config file (it logs "Bad configuration format" and skips the line); read as ` + name})
		}
		if strings.HasSuffix(text, ";") {
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: name, Severity: Warning,
				Message: "the line ends with a semicolon, which is part of the value (coturn warns about this too)"})
		}
		if strings.Contains(value, " #") || strings.Contains(value, "\t#") {
			in.Findings = append(in.Findings, Finding{Pos: pos, Option: name, Severity: Note,
				Message: "coturn has no trailing comments: the text from '#' on is part of the value (numbers stop at the first non-digit)"})
		}
		in.Options = append(in.Options, Option{Name: name, Value: value, Pos: pos})
	}
	if err := sc.Err(); err != nil {
		return Input{}, fmt.Errorf("read coturn config (after line %d): %w", line, err)
	}
	return in, nil
}

// splitKeyValue is coturn's parse_arg_string: the key ends at the first
// space, tab or '=', and a run of those separates it from the value.
func splitKeyValue(s string) (name, value string) {
	i := strings.IndexAny(s, " \t=")
	if i < 0 {
		return s, ""
	}
	return s[:i], unquote(strings.TrimLeft(s[i:], " \t="))
}

// unquote removes a leading '"' and, after trailing blanks, a final '"', as
// coturn does; an unbalanced quote just loses its opening '"'.
func unquote(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	v = strings.TrimRight(v[1:], " \t\r\n")
	return strings.TrimSuffix(v, `"`)
}
