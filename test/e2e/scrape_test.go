package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// scrapeClient opens a new connection per scrape: a kept-alive connection
// would hold a goroutine and a descriptor in turnd between scrapes, and the
// soak test counts both.
var scrapeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// scrape returns every sample of turnd's /metrics, keyed by the sample name
// as written (`turnd_allocations{transport="udp"}`), failing the test if
// turnd does not answer.
func (p *turnd) scrape() map[string]float64 {
	p.t.Helper()
	s, err := p.tryScrape()
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// tryScrape is scrape for callers off the test's goroutine, which must not
// end the test.
func (p *turnd) tryScrape() (map[string]float64, error) {
	resp, err := scrapeClient.Get("http://" + p.HTTP + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
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
		return nil, fmt.Errorf("read /metrics: %w", err)
	}
	return out, nil
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
