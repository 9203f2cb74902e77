package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	dashboardFile  = "../../deploy/grafana/turnd.json"
	metricsDocFile = "../../docs/metrics.md"
	readmeFile     = "../../README.md"
)

// TestDashboardQueriesExistingMetrics parses the Grafana dashboard, pulls
// the metric names out of every PromQL expression in it (panels,
// annotations, template variables) and checks that turnd exports each one.
// A reload is done first: turnd_config_reloads_total has no series before.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	exprs := dashboardQueries(dash)
	if len(exprs) < 15 {
		t.Fatalf("only %d PromQL expressions found in the dashboard", len(exprs))
	}
	srv := start(t, testConfig())
	srv.signal(syscall.SIGHUP)
	srv.waitLog("reloaded", 5*time.Second)
	families := metricFamilies(t, srv)

	used := map[string]bool{}
	for _, expr := range exprs {
		names := promMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("no metric name found in %q", expr)
		}
		for _, n := range names {
			used[n] = true
			if !families[n] && !families[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] {
				t.Errorf("dashboard queries %s, which turnd does not export (in %q)", n, expr)
			}
		}
	}
	// What the dashboard is for (issue: allocations by transport, relayed
	// traffic by direction, rejections by reason, drain state and
	// deadline, reload status).
	for _, want := range []string{"turnd_allocations", "turnd_relayed_packets_total", "turnd_relayed_bytes_total",
		"turnd_allocations_rejected_total", "turnd_draining", "turnd_drain_deadline_timestamp_seconds",
		"turnd_config_last_reload_successful", "turnd_drain_force_closed_allocations_total"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// TestMetricsDocListsEveryMetric keeps docs/metrics.md and the README's
// metrics table honest both ways: each turnd_/turn_ family turnd exports
// has exactly one row in a metric table of each, and each metric named in
// the first cell of such a row is exported.
func TestMetricsDocListsEveryMetric(t *testing.T) {
	cfg := testConfig()
	cfg.HTTP.MetricsUsers = []string{"demo"} // the per-user metrics exist only then
	srv := start(t, cfg)
	srv.signal(syscall.SIGHUP)
	srv.waitLog("reloaded", 5*time.Second)
	families := metricFamilies(t, srv)
	for _, file := range []string{metricsDocFile, readmeFile} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			doc, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			documented := metricTableRows(string(doc))
			for m, rows := range documented {
				if !families[m] {
					t.Errorf("%s documents %s, which turnd does not export", file, m)
				}
				if rows > 1 {
					t.Errorf("%s documents %s in %d rows, want one", file, m, rows)
				}
			}
			for f := range families {
				if (strings.HasPrefix(f, "turnd_") || strings.HasPrefix(f, "turn_")) && documented[f] == 0 {
					t.Errorf("turnd exports %s, but %s has no table row for it", f, file)
				}
			}
		})
	}
}

// metricTableRows counts, for each metric named in the first cell of a row
// of a table headed "| metric |", the rows naming it.
func metricTableRows(doc string) map[string]int {
	rows := map[string]int{}
	name := regexp.MustCompile("`([a-z_:][a-z0-9_:]*)(\\{[^`]*\\})?`")
	inMetricTable := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "| metric |"):
			inMetricTable = true // a table of metrics, not of label values
			continue
		case !strings.HasPrefix(line, "|"):
			inMetricTable = false
		}
		if !inMetricTable || !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			rows[m[1]]++
		}
	}
	return rows
}

// metricFamilies returns the names of every family on turnd's /metrics.
func metricFamilies(t *testing.T, srv *turnd) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + srv.HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("only %d metric families on /metrics", len(out))
	}
	return out
}

// dashboardQueries returns every PromQL expression of a Grafana dashboard:
// "expr" fields anywhere, and template variables' label_values() selectors.
func dashboardQueries(v any) []string {
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				walk(child, k)
			}
		case []any:
			for _, child := range x {
				walk(child, key)
			}
		case string:
			switch {
			case key == "expr":
				out = append(out, x)
			case key == "query" && strings.HasPrefix(x, "label_values("):
				// label_values(SELECTOR, LABEL): the selector is PromQL.
				inner := strings.TrimSuffix(strings.TrimPrefix(x, "label_values("), ")")
				if i := strings.LastIndexByte(inner, ','); i >= 0 {
					inner = inner[:i]
				}
				out = append(out, inner)
			}
		}
	}
	walk(v, "")
	slices.Sort(out)
	return slices.Compact(out)
}

var (
	promString     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers   = regexp.MustCompile(`\{[^{}]*\}`)
	promRange      = regexp.MustCompile(`\[[^\]]*\]`)
	promLabelList  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdentifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// promMetricNames extracts the metric names of a PromQL expression: the
// identifiers left once strings, label matchers, ranges and label lists are
// removed, that are neither functions (followed by '('), keywords, nor
// Grafana variables.
func promMetricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promLabelList.ReplaceAllString(s, " ")
	keywords := []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
	var names []string
	for _, loc := range promIdentifier.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(keywords, strings.ToLower(id)) ||
			(loc[0] > 0 && s[loc[0]-1] == '$') {
			continue
		}
		names = append(names, id)
	}
	return names
}

func TestPromMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`sum by (transport) (rate(turnd_allocations_created_total{job=~"$job"}[$__rate_interval]))`, []string{"turnd_allocations_created_total"}},
		{`max by (instance) (a_seconds{x="}"} - time()) and on (instance) (max by (instance) (b{}) == 1)`, []string{"a_seconds", "b"}},
		{`sum(rate(x_total[5m])) * 8`, []string{"x_total"}},
		{`turnd_draining{job=~"$job"}`, []string{"turnd_draining"}},
	}
	for _, tt := range tests {
		if got := promMetricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("promMetricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
