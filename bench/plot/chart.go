package main

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The chart's size: 960×640 pixels at vgimg's 96 dpi.
const (
	chartWidth  = 10 * vg.Inch
	chartHeight = 20 * vg.Inch / 3
)

// errNoSteps means the results hold no saturation ramp to draw.
var errNoSteps = errors.New("no saturation steps")

// server is one line of the chart.
type server struct {
	name  string
	color color.RGBA
}

// servers lists the chart's lines in legend order, each with a fixed
// colour so charts of different runs compare at a glance.
func servers() []server {
	return []server{
		{"turnd", color.RGBA{31, 119, 180, 255}},
		{"coturn", color.RGBA{230, 120, 20, 255}},
	}
}

// newChart builds the CPU-per-packet chart: one line per server, a filled
// marker per held step and a ring where the server did not hold the rate.
func newChart(res results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Server CPU per relayed packet vs offered load"
	p.Title.TextStyle.Font.Size = vg.Points(16)
	p.X.Label.Text = "offered load, thousand messages/s each way\n\n" +
		fmt.Sprintf("loopback, %d CPUs (%s), turnload relay, 200 clients, 100 B; ", res.Machine.CPUs, res.Machine.CPUModel) +
		"not held: loss > 1 % or turnload below 97 % of the rate"
	p.Y.Label.Text = "CPU µs per relayed packet"
	p.Title.Padding = vg.Points(10)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(13)
		a.Tick.Label.Font.Size = vg.Points(12)
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(13)
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(12), -vg.Points(8)
	p.Legend.Padding = vg.Points(4)

	drawn := 0
	for _, s := range servers() {
		for _, r := range res.Rows {
			if r.Scenario != "saturation" || r.Server != s.name || len(r.Steps) == 0 {
				continue
			}
			all := make(plotter.XYs, 0, len(r.Steps))
			var held, notHeld plotter.XYs
			for _, st := range r.Steps {
				pt := plotter.XY{X: st.OfferedRate / 1000, Y: st.CPUPerPacketUS}
				all = append(all, pt)
				if st.OK {
					held = append(held, pt)
				} else {
					notHeld = append(notHeld, pt)
				}
			}
			if err := addSeries(p, s.name, s.color, all, held, notHeld); err != nil {
				return nil, err
			}
			drawn++
		}
	}
	if drawn == 0 {
		return nil, errNoSteps
	}
	useSteps(&p.X, 10)
	useSteps(&p.Y, 6)
	ring, err := markers(plotter.XYs{}, color.Gray{Y: 90}, draw.RingGlyph{})
	if err != nil {
		return nil, err
	}
	p.Legend.Add("not held", ring)
	return p, nil
}

// addSeries adds one server's line, its held steps as discs and the steps
// it did not hold as rings.
func addSeries(p *plot.Plot, name string, c color.Color, all, held, notHeld plotter.XYs) error {
	l, err := plotter.NewLine(all)
	if err != nil {
		return fmt.Errorf("line %s: %w", name, err)
	}
	l.Color, l.Width = c, vg.Points(2.5)
	discs, err := markers(held, c, draw.CircleGlyph{})
	if err != nil {
		return fmt.Errorf("markers %s: %w", name, err)
	}
	rings, err := markers(notHeld, c, draw.RingGlyph{})
	if err != nil {
		return fmt.Errorf("markers %s: %w", name, err)
	}
	p.Add(l, discs, rings)
	p.Legend.Add(name, l, discs)
	return nil
}

func markers(xys plotter.XYs, c color.Color, shape draw.GlyphDrawer) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(4.5), Shape: shape}
	return s, nil
}
