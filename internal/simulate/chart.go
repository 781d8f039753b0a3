package simulate

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The chart's geometry, in pixels: a header, then the limiters' panels in a
// grid of two columns. Each panel draws, against time, the requests offered
// and allowed in each second and, beneath, the limiter's level.
const (
	chartWidth   = 1200
	headerHeight = 112
	panelWidth   = 600
	panelHeight  = 392
	plotLeft     = 62 // room for the y axis's labels
	plotRight    = 24
	rateTop      = 46  // below the panel's title
	rateHeight   = 170 // requests per second
	levelTop     = rateTop + rateHeight + 42
	levelHeight  = 90
)

// The colours of each limiter's lines, by its name, and of what every
// panel shares.
var (
	limiterColors = map[string]string{
		"token-bucket":   "#1f6fb4",
		"fixed-window":   "#c8402b",
		"sliding-window": "#7b4fb0",
		"pacer":          "#23904a",
	}
	offeredFill   = "#e4e4e4"
	offeredStroke = "#9a9a9a"
	inkColor      = "#222"
	gridColor     = "#ececec"
)

// WriteSVG draws the report as a standalone SVG: a title that states the
// run's settings, a legend, and a panel per limiter. scenario names the run
// in the title.
func WriteSVG(w io.Writer, r *Report, scenario string) error {
	bw := bufio.NewWriter(w)
	rows := (len(r.Results) + 1) / 2
	height := headerHeight + rows*panelHeight
	c := &canvas{w: bw}
	c.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" fill="%s">`+"\n",
		chartWidth, height, chartWidth, height, inkColor)
	c.printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	c.header(r, scenario)
	ratesTop := 0
	for _, res := range r.Results {
		ratesTop = max(ratesTop, slices.Max(res.OfferedPerSecond), slices.Max(res.AllowedPerSecond))
	}
	for i, res := range r.Results {
		c.panel(r, res, (i%2)*panelWidth, headerHeight+(i/2)*panelHeight, float64(ratesTop))
	}
	c.printf("</svg>\n")
	if c.err != nil {
		return c.err
	}
	return bw.Flush()
}

// canvas writes SVG elements, keeping the first write error.
type canvas struct {
	w   io.Writer
	err error
}

func (c *canvas) printf(format string, args ...any) {
	if c.err == nil {
		_, c.err = fmt.Fprintf(c.w, format, args...)
	}
}

// text writes s at (x, y); anchor is start, middle or end.
func (c *canvas) text(x, y float64, size int, anchor, attrs, s string) {
	c.printf(`<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s"%s>%s</text>`+"\n", x, y, size, anchor, attrs, escape(s))
}

func escape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // writes to a Builder never fail
	return b.String()
}

func (c *canvas) header(r *Report, scenario string) {
	c.text(24, 32, 20, "start", ` font-weight="bold"`, "pacer simulate — scenario "+scenario)
	c.text(24, 54, 14, "start", "", r.Config.Traffic())
	c.text(24, 74, 14, "start", ` fill="#555"`, r.Limiters())
	// The legend.
	y := 98.0
	c.printf(`<rect x="24" y="%.1f" width="22" height="10" fill="%s" stroke="%s"/>`+"\n", y-9, offeredFill, offeredStroke)
	c.text(52, y, 13, "start", "", "offered per second")
	c.printf(`<line x1="190" y1="%.1f" x2="212" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", y-4, y-4, inkColor)
	c.text(218, y, 13, "start", "", "allowed (sent) per second, in the limiter's colour")
	c.printf(`<line x1="540" y1="%.1f" x2="562" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n", y-4, y-4, inkColor)
	c.text(568, y, 13, "start", "", "long-run allowance, and the level's ceiling")
	c.text(chartWidth-24, y, 13, "end", ` fill="#555"`, "beneath each: the limiter's level over time")
}

// panel draws one limiter at (x, y): its title, its rates and its level.
func (c *canvas) panel(r *Report, res Result, x, y int, ratesTop float64) {
	color := limiterColors[res.Name]
	if color == "" {
		color = inkColor
	}
	c.printf(`<g id="panel-%s" class="panel" transform="translate(%d %d)">`+"\n", res.Name, x, y)
	c.printf(`<rect x="8" y="4" width="%d" height="%d" rx="6" fill="none" stroke="#ddd"/>`+"\n", panelWidth-16, panelHeight-12)
	c.text(24, 28, 16, "start", fmt.Sprintf(` font-weight="bold" fill="%s"`, color), res.Name)
	summary := fmt.Sprintf("offered %d · allowed %d · rejected %d · busiest second %d", res.Offered, res.Allowed, res.Rejected, res.BusiestSecond)
	if q := res.Queue; q != nil {
		summary = fmt.Sprintf("offered %d · sent %d · still queued %d · busiest second %d", res.Offered, res.Allowed, q.QueuedAtEnd, res.BusiestSecond)
	}
	c.text(panelWidth-24, 28, 12, "end", ` fill="#444"`, summary)

	seconds := float64(len(res.OfferedPerSecond))
	xs := scale{top: seconds, low: plotLeft, high: panelWidth - plotRight}

	// Requests per second: offered as a grey area, allowed as a line.
	rateTicks := niceTicks(ratesTop, 4)
	ys := scale{top: rateTicks[len(rateTicks)-1], low: rateTop + rateHeight, high: rateTop}
	c.axes(xs, ys, rateTicks, "requests/s")
	c.printf(`<path class="offered" d="%s" fill="%s" stroke="%s" stroke-width="1"/>`+"\n", stepArea(res.OfferedPerSecond, xs, ys), offeredFill, offeredStroke)
	c.printf(`<path class="allowed" d="%s" fill="%s" fill-opacity="0.15" stroke="%s" stroke-width="2.5" stroke-linejoin="round"/>`+"\n", stepArea(res.AllowedPerSecond, xs, ys), color, color)
	c.dashed(xs, ys, r.Config.Refill, fmt.Sprintf("%v/s", r.Config.Refill))

	// The level, beneath.
	level := res.Level
	levelMax := max(level.Limit, slices.Max(level.Values))
	levelTicks := niceTicks(levelMax, 2)
	ls := scale{top: levelTicks[len(levelTicks)-1], low: levelTop + levelHeight, high: levelTop}
	c.axes(xs, ls, levelTicks, "")
	c.text(plotLeft+6, levelTop-8, 12, "start", ` fill="#444"`, level.Label)
	c.printf(`<path class="level" d="%s" fill="%s" fill-opacity="0.25" stroke="%s" stroke-width="1.5"/>`+"\n", levelArea(level, xs, ls), color, color)
	if level.Limit > 0 {
		c.dashed(xs, ls, level.Limit, label(level.Limit))
	}
	c.text((xs.low+xs.high)/2, levelTop+levelHeight+32, 12, "middle", ` fill="#444"`, "time (s)")
	c.printf("</g>\n")
}

// axes draws a plot's frame, horizontal grid lines at the y ticks with
// their labels, and the x axis's ticks in seconds.
func (c *canvas) axes(xs, ys scale, yTicks []float64, yTitle string) {
	for _, v := range yTicks {
		y := ys.at(v)
		c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", xs.low, y, xs.high, y, gridColor)
		c.text(xs.low-6, y+4, 11, "end", ` fill="#555"`, label(v))
	}
	for _, v := range niceTicks(xs.top, 6) {
		if v > xs.top+1e-9 {
			break
		}
		x := xs.at(v)
		c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", x, ys.low, x, ys.low+4)
		c.text(x, ys.low+16, 11, "middle", ` fill="#555"`, label(v))
	}
	c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", xs.low, ys.low, xs.high, ys.low)
	c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", xs.low, ys.low, xs.low, ys.high)
	if yTitle != "" {
		mid := (ys.low + ys.high) / 2
		c.printf(`<text x="0" y="0" font-size="11" fill="#555" text-anchor="middle" transform="translate(%.1f %.1f) rotate(-90)">%s</text>`+"\n", xs.low-40, mid, escape(yTitle))
	}
}

// dashed draws a dashed line across the plot at v, labelled at its right.
func (c *canvas) dashed(xs, ys scale, v float64, text string) {
	if v > ys.top {
		return
	}
	y := ys.at(v)
	c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n", xs.low, y, xs.high, y, inkColor)
	c.text(xs.high-2, y-4, 11, "end", "", text)
}

// stepArea is the path of a per-second series drawn as steps, closed along
// the x axis so that it can be filled.
func stepArea(perSecond []int, xs, ys scale) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%.1f %.1f", xs.at(0), ys.at(0))
	for s, n := range perSecond {
		fmt.Fprintf(&b, "V%.1fH%.1f", ys.at(float64(n)), xs.at(float64(s+1)))
	}
	fmt.Fprintf(&b, "V%.1fZ", ys.at(0))
	return b.String()
}

// levelArea is the path of a level's samples joined by straight lines,
// closed along the x axis.
func levelArea(l Level, xs, ys scale) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%.1f %.1f", xs.at(0), ys.at(0))
	var last float64
	for i, v := range l.Values {
		last = min(xs.top, (time.Duration(i) * l.Step).Seconds())
		fmt.Fprintf(&b, "L%.1f %.1f", xs.at(last), ys.at(v))
	}
	fmt.Fprintf(&b, "L%.1f %.1fZ", xs.at(last), ys.at(0))
	return b.String()
}
