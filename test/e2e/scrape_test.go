package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
)

// scrapeClient opens a new connection per scrape: a kept-alive connection
// would hold a goroutine and a descriptor in turnd between scrapes, and the
// soak test counts both.
var scrapeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// scrape returns every sample of turnd's /metrics,
// keyed by the sample name as written (`turnd_allocations{transport="udp"}`).
func (p *turnd) scrape() map[string]float64 {
	p.t.Helper()
	resp, err := scrapeClient.Get("http://" + p.HTTP + "/metrics")
	if err != nil {
		p.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		p.t.Fatalf("read /metrics: %v", err)
	}
	return out
}

// sumPrefix adds up every sample whose name starts with prefix, e.g. all
// transports of `turnd_allocations{`.
func sumPrefix(samples map[string]float64, prefix string) float64 {
	var sum float64
	for k, v := range samples {
		if strings.HasPrefix(k, prefix) {
			sum += v
		}
	}
	return sum
}
