// Command plot draws docs/img's chart from bench/results/latest.json:
// server CPU per relayed packet against offered load, one line per server,
// from the saturation ramp, drawn with gonum.org/v1/plot.
//
// It is its own Go module so that the plotting library and its fonts never
// enter the server's module graph. It knows the results file's saturation
// steps and nothing else of the benchmark.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
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
	if err := render(*in, *out); err != nil {
		fmt.Fprintln(stderr, "plot:", err)
		return 1
	}
	return 0
}

// render reads the results file in and writes the chart to out as a PNG.
func render(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode results: %w", err)
	}
	c, err := newChart(res)
	if err != nil {
		return fmt.Errorf("chart %s: %w", in, err)
	}
	if err := c.Save(chartWidth, chartHeight, out); err != nil {
		return fmt.Errorf("save chart: %w", err)
	}
	return nil
}
