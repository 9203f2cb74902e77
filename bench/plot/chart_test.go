package main

import (
	"bytes"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	tests := []struct {
		max  float64
		n    int
		want float64
	}{
		{100, 5, 20},
		{90, 8, 20},
		{12, 6, 2},
		{7.3, 6, 2},
		{0.9, 6, 0.2},
		{0, 6, 1},
	}
	for _, tt := range tests {
		if got := niceStep(tt.max, tt.n); got != tt.want {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tt.max, tt.n, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 40: "40", 120: "120", 0.5: "0.5", 2.25: "2.25", 1.2: "1.2"} {
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestFontCoversChartText checks every character the chart prints has a
// glyph, so no label silently loses letters.
func TestFontCoversChartText(t *testing.T) {
	f := newFont(1)
	text := "SERVER CPU PER RELAYED PACKET VS OFFERED LOAD, THOUSAND MESSAGES/S EACH WAY US (AMD EPYC) 0123456789 " +
		"NOT HELD: LOSS > 1 % OR TURNLOAD BELOW 97 % OF THE RATE, 200 CLIENTS, 100 B TURND COTURN 4.6.1."
	for _, r := range strings.ToUpper(text) {
		if _, ok := f.g[r]; !ok {
			t.Errorf("no glyph for %q", r)
		}
	}
	for r, g := range f.g {
		for _, row := range g {
			if len(row) != 5 {
				t.Errorf("glyph %q has a row of %d columns", r, len(row))
			}
		}
	}
}

func TestRender(t *testing.T) {
	c := &chart{w: 400, h: 300, left: 60, right: 20, top: 40, bottom: 60, title: "T", xLabel: "X", yLabel: "Y",
		series: []series{
			{name: "turnd", color: color.RGBA{0, 0, 255, 255}, points: []point{{10, 8, false}, {20, 7, false}, {30, 9, true}}},
			{name: "coturn", color: color.RGBA{255, 0, 0, 255}, points: []point{{10, 6, false}, {40, 5, false}}},
		}}
	img := c.render()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
	// Some pixels of each series' colour must be drawn.
	for _, s := range c.series {
		found := false
		for y := 0; y < c.h && !found; y++ {
			for x := 0; x < c.w; x++ {
				if img.RGBAAt(x, y) == s.color {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("series %s not drawn", s.name)
		}
	}
}
