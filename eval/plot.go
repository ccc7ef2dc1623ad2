package eval

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"unicode"
)

// Series is one named line or bar colour of a chart; NaN values are gaps.
type Series struct {
	Name   string
	Values []float64
}

// Chart is a percent chart (y from 0 to 100) over categories on the x
// axis, drawn as lines (one per series) or as grouped bars.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	X      []string // category labels
	Series []Series
	Bars   bool
}

// palette is a colour-blind-friendly set (Okabe-Ito), cycled.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
	{120, 120, 120, 255}, {150, 70, 30, 255},
}

// canvas is an RGBA image with the few drawing operations charts need.
type canvas struct{ img *image.RGBA }

func newCanvas(w, h int) *canvas {
	c := &canvas{image.NewRGBA(image.Rect(0, 0, w, h))}
	c.fill(0, 0, w, h, color.RGBA{255, 255, 255, 255})
	return c
}

func (c *canvas) fill(x0, y0, x1, y1 int, col color.RGBA) {
	r := image.Rect(x0, y0, x1, y1).Intersect(c.img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.img.SetRGBA(x, y, col)
		}
	}
}

// line draws a line w pixels thick (Bresenham, stamped squares).
func (c *canvas) line(x0, y0, x1, y1, w int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.fill(x0-w/2, y0-w/2, x0-w/2+w, y0-w/2+w, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// text draws s with its top-left corner at (x, y), each font pixel s×s.
func (c *canvas) text(x, y int, s string, scale int, col color.RGBA) {
	for _, r := range s {
		g, ok := font5x7[unicode.ToUpper(r)]
		if !ok {
			g = font5x7['?']
		}
		for row, bits := range g {
			for k := 0; k < 5; k++ {
				if bits[k] == '#' {
					c.fill(x+k*scale, y+row*scale, x+(k+1)*scale, y+(row+1)*scale, col)
				}
			}
		}
		x += 6 * scale
	}
}

// textWidth is the width in pixels of s drawn at scale.
func textWidth(s string, scale int) int { return len([]rune(s)) * 6 * scale }

// PNG draws the chart.
func (ch *Chart) PNG() ([]byte, error) {
	const (
		w, h                 = 960, 540
		left, right, top, bt = 70, 230, 50, 80
	)
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{225, 225, 225, 255}
	c := newCanvas(w, h)
	c.text((w-right+left-textWidth(ch.Title, 2))/2, 14, ch.Title, 2, black)
	x0, x1, y0, y1 := left, w-right, h-bt, top // plot area; y grows down
	yOf := func(v float64) int { return y0 - int(math.Round(v/100*float64(y0-y1))) }
	for t := 0; t <= 100; t += 10 {
		y := yOf(float64(t))
		c.line(x0, y, x1, y, 1, grey)
		c.line(x0-5, y, x0, y, 1, black)
		lbl := fmt.Sprint(t)
		c.text(x0-8-textWidth(lbl, 1), y-3, lbl, 1, black)
	}
	c.line(x0, y0, x1, y0, 1, black)
	c.line(x0, y0, x0, y1, 1, black)
	c.text(8, top-20, ch.YLabel, 1, black)
	c.text((x0+x1-textWidth(ch.XLabel, 1))/2, h-22, ch.XLabel, 1, black)
	n := max(len(ch.X), 1)
	slot := float64(x1-x0) / float64(n)
	xOf := func(i int) int { return x0 + int(slot*(float64(i)+0.5)) }
	stagger := false // labels wider than their slot alternate between two rows
	for _, lbl := range ch.X {
		stagger = stagger || textWidth(lbl, 1) > int(slot)-4
	}
	for i, lbl := range ch.X {
		x := xOf(i)
		c.line(x, y0, x, y0+5, 1, black)
		off := 10
		if stagger && i%2 == 1 {
			off = 22
		}
		c.text(x-textWidth(lbl, 1)/2, y0+off, lbl, 1, black)
	}
	ns := max(len(ch.Series), 1)
	for s, ser := range ch.Series {
		col := palette[s%len(palette)]
		if ch.Bars {
			bw := max(int(slot*0.8)/ns, 1)
			for i, v := range ser.Values {
				if i >= n || math.IsNaN(v) {
					continue
				}
				bx := xOf(i) - int(slot*0.4) + s*bw
				c.fill(bx, yOf(v), bx+bw-1, y0, col)
			}
			continue
		}
		px, py, have := 0, 0, false
		for i, v := range ser.Values {
			if i >= n || math.IsNaN(v) {
				have = false
				continue
			}
			x, y := xOf(i), yOf(v)
			c.fill(x-3, y-3, x+4, y+4, col)
			if have {
				c.line(px, py, x, y, 2, col)
			}
			px, py, have = x, y, true
		}
	}
	// Legend, right of the plot.
	for s, ser := range ch.Series {
		y := top + 10 + s*18
		c.fill(x1+20, y, x1+34, y+10, palette[s%len(palette)])
		c.text(x1+42, y+2, ser.Name, 1, black)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, c.img); err != nil {
		return nil, fmt.Errorf("eval: png: %w", err)
	}
	return buf.Bytes(), nil
}
