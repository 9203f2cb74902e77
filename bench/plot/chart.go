package main

import (
	"image"
	"image/color"
	"math"
)

// series is one line of the chart.
type series struct {
	name   string
	color  color.RGBA
	points []point
}

// point is one measurement; a failed one (loss above the limit) is drawn
// hollow.
type point struct {
	x, y   float64
	failed bool
}

// chart is a line chart with linear axes starting at zero.
type chart struct {
	w, h                     int
	title, xLabel, yLabel    string
	notes                    []string // lines under the chart
	series                   []series
	left, right, top, bottom int // margins
}

// The palette; never written.
var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{225, 225, 225, 255}
	dark  = color.RGBA{90, 90, 90, 255}
)

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

// render draws the chart.
func (c *chart) render() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, c.w, c.h))
	fill(img, img.Bounds(), white)
	big, small := newFont(2), newFont(2)

	var maxX, maxY float64
	for _, s := range c.series {
		for _, p := range s.points {
			maxX, maxY = math.Max(maxX, p.x), math.Max(maxY, p.y)
		}
	}
	xStep, yStep := niceStep(maxX, 8), niceStep(maxY, 6)
	maxX = math.Ceil(maxX/xStep) * xStep
	maxY = math.Ceil(maxY/yStep) * yStep
	x0, y0 := c.left, c.h-c.bottom
	x1, y1 := c.w-c.right, c.top
	px := func(x float64) int { return x0 + int(math.Round(x/maxX*float64(x1-x0))) }
	py := func(y float64) int { return y0 - int(math.Round(y/maxY*float64(y0-y1))) }

	// Grid and tick labels.
	for v := 0.0; v <= maxX+xStep/2; v += xStep {
		x := px(v)
		line(img, x, y0, x, y1, grey, 1)
		label := format(v)
		big.draw(img, x-big.width(label)/2, y0+8, label, dark)
	}
	for v := 0.0; v <= maxY+yStep/2; v += yStep {
		y := py(v)
		line(img, x0, y, x1, y, grey, 1)
		label := format(v)
		big.draw(img, x0-8-big.width(label), y-big.height()/2, label, dark)
	}
	line(img, x0, y0, x1, y0, black, 2)
	line(img, x0, y0, x0, y1, black, 2)

	// Titles.
	big.draw(img, (c.w-big.width(c.title))/2, 10, c.title, black)
	big.draw(img, (x0+x1-big.width(c.xLabel))/2, y0+8+big.height()+10, c.xLabel, black)
	big.draw(img, 10, y1-big.height()-10, c.yLabel, black)
	for i, n := range c.notes {
		small.draw(img, 10, c.h-(len(c.notes)-i)*(small.height()+6), n, dark)
	}

	// Lines, then markers on top.
	for _, s := range c.series {
		for i := 1; i < len(s.points); i++ {
			a, b := s.points[i-1], s.points[i]
			line(img, px(a.x), py(a.y), px(b.x), py(b.y), s.color, 3)
		}
		for _, p := range s.points {
			marker(img, px(p.x), py(p.y), s.color, p.failed)
		}
	}

	// Legend, top right inside the plot.
	lx, ly := x1-big.width("COTURN 4.6.1")-60, y1+12
	for _, s := range c.series {
		line(img, lx, ly+big.height()/2, lx+30, ly+big.height()/2, s.color, 3)
		marker(img, lx+15, ly+big.height()/2, s.color, false)
		big.draw(img, lx+40, ly, s.name, black)
		ly += big.height() + 10
	}
	marker(img, lx+15, ly+big.height()/2, dark, true)
	big.draw(img, lx+40, ly, "NOT HELD", dark)
	return img
}

// format prints a tick value without needless decimals.
func format(v float64) string {
	if v == math.Trunc(v) {
		return formatInt(int(v))
	}
	return trimZeros(v)
}

func formatInt(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func trimZeros(v float64) string {
	s := []byte(formatInt(int(math.Round(v * 100))))
	for len(s) < 3 {
		s = append([]byte{'0'}, s...)
	}
	s = append(s[:len(s)-2], append([]byte{'.'}, s[len(s)-2:]...)...)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return string(s)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws a segment (Bresenham) with square pens of width w.
func line(img *image.RGBA, xa, ya, xb, yb int, c color.RGBA, w int) {
	dx, dy := abs(xb-xa), -abs(yb-ya)
	sx, sy := sign(xb-xa), sign(yb-ya)
	e := dx + dy
	for {
		fill(img, image.Rect(xa-w/2, ya-w/2, xa-w/2+w, ya-w/2+w), c)
		if xa == xb && ya == yb {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			xa += sx
		}
		if e2 <= dx {
			e += dx
			ya += sy
		}
	}
}

// marker is a 9x9 square, hollow for a failed point.
func marker(img *image.RGBA, x, y int, c color.RGBA, hollow bool) {
	fill(img, image.Rect(x-4, y-4, x+5, y+5), c)
	if hollow {
		fill(img, image.Rect(x-2, y-2, x+3, y+3), white)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
