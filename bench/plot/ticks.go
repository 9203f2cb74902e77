package main

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// stepTicks places a labelled tick at every multiple of its step and an
// unlabelled one halfway: gonum's default asks for three ticks, too few to
// read a value off this chart.
type stepTicks float64

// Ticks implements plot.Ticker.
func (s stepTicks) Ticks(lo, hi float64) []plot.Tick {
	step := float64(s)
	var ts []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi; i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten that
// divides [0, max] into at most n intervals.
func niceStep(maxV float64, n int) float64 {
	if maxV <= 0 {
		return 1
	}
	raw := maxV / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// useSteps gives the axis about n labelled intervals from zero and rounds
// its maximum up to the last one, so the top gridline closes the chart.
func useSteps(a *plot.Axis, n int) {
	step := niceStep(a.Max, n)
	a.Min, a.Max = 0, math.Ceil(a.Max/step)*step
	a.Tick.Marker = stepTicks(step)
}
