package main

import (
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
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

func TestStepTicks(t *testing.T) {
	var labels []string
	for _, tk := range stepTicks(2.5).Ticks(0, 5) {
		labels = append(labels, tk.Label)
	}
	want := []string{"0", "", "2.5", "", "5"}
	if len(labels) != len(want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
	for i := range want {
		if labels[i] != want[i] {
			t.Fatalf("labels %q, want %q", labels, want)
		}
	}
}

// TestRenderFixture draws the chart from a small results file and checks
// the PNG has the chart's size and shows every server's colour.
func TestRenderFixture(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chart.png")
	if err := render("testdata/results.json", out); err != nil {
		t.Fatalf("render: %v", err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got := img.Bounds().Size(); got != (image.Point{960, 640}) {
		t.Errorf("chart is %v pixels, want 960x640", got)
	}
	for _, s := range servers() {
		if !hasColor(img, s.color) {
			t.Errorf("no %s line in the chart", s.name)
		}
	}
}

func TestRenderWithoutSaturationSteps(t *testing.T) {
	in := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(in, []byte(`{"rows":[{"scenario":"udp-channels","server":"turnd"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := render(in, filepath.Join(t.TempDir(), "chart.png"))
	if !errors.Is(err, errNoSteps) {
		t.Fatalf("render = %v, want %v", err, errNoSteps)
	}
}

func hasColor(img image.Image, want color.RGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == want {
				return true
			}
		}
	}
	return false
}
