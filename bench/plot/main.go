// Command plot draws docs/img's chart from bench/results/latest.json:
// server CPU per relayed packet against offered load, one line per server,
// from the saturation ramp. It uses only the standard library (image/png
// and a built-in bitmap font), so drawing needs nothing installed.
//
// It knows the results file's saturation steps and nothing else of the
// benchmark.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// results is the part of the runner's JSON the chart reads.
type results struct {
	Machine struct {
		CPUs     int    `json:"cpus"`
		CPUModel string `json:"cpu_model"`
	} `json:"machine"`
	Rows []struct {
		Scenario string `json:"scenario"`
		Server   string `json:"server"`
		Steps    []struct {
			OfferedRate    float64 `json:"offered_rate"`
			CPUPerPacketUS float64 `json:"cpu_per_packet_us"`
			OK             bool    `json:"ok"`
		} `json:"steps"`
	} `json:"rows"`
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "bench/results/latest.json", "benchmark results")
	out := fs.String("out", "docs/img/cpu-per-packet.png", "PNG to write")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := plot(*in, *out); err != nil {
		fmt.Fprintln(stderr, "plot:", err)
		return 1
	}
	return 0
}

// seriesColors gives each server a fixed colour, so charts of different
// runs compare at a glance.
func seriesColors() map[string]color.RGBA {
	return map[string]color.RGBA{
		"turnd":  {31, 119, 180, 255},
		"coturn": {230, 120, 20, 255},
	}
}

func plot(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode results: %w", err)
	}
	c := &chart{w: 960, h: 640, left: 90, right: 30, top: 80, bottom: 130,
		title:  "SERVER CPU PER RELAYED PACKET VS OFFERED LOAD",
		xLabel: "OFFERED LOAD, THOUSAND MESSAGES/S EACH WAY",
		yLabel: "CPU US PER RELAYED PACKET",
		notes: []string{
			fmt.Sprintf("LOOPBACK, %d CPUS (%s), TURNLOAD RELAY, 200 CLIENTS, 100 B", res.Machine.CPUs, res.Machine.CPUModel),
			"NOT HELD: LOSS > 1 % OR TURNLOAD BELOW 97 % OF THE RATE",
		},
	}
	colors := seriesColors()
	for _, name := range []string{"turnd", "coturn"} {
		for _, r := range res.Rows {
			if r.Scenario != "saturation" || r.Server != name {
				continue
			}
			s := series{name: name, color: colors[name]}
			for _, st := range r.Steps {
				s.points = append(s.points, point{x: st.OfferedRate / 1000, y: st.CPUPerPacketUS, failed: !st.OK})
			}
			c.series = append(c.series, s)
		}
	}
	if len(c.series) == 0 {
		return fmt.Errorf("no saturation steps in %s", in)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create chart: %w", err)
	}
	if err := png.Encode(f, c.render()); err != nil {
		f.Close()
		return fmt.Errorf("encode chart: %w", err)
	}
	return f.Close()
}
