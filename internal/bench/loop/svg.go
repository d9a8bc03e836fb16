package loop

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// chart geometry
const (
	svgWidth, svgHeight         = 640, 400
	plotLeft, plotRight         = 70, 570
	plotTop, plotBottom         = 50, 330
	finalizedColor, latencyColr = "#1f6feb", "#d1242f"
)

// point is one case on the chart.
type point struct{ offered, finalized, p99 float64 }

// WriteSVG draws finalized runs/s (left axis) and admission → finalization
// p99 in seconds (right axis) against the offered rate, one point per case
// (a saturation case at the rate its runs actually started at).
func (r *Report) WriteSVG(w io.Writer) error {
	var pts []point
	for _, c := range r.Cases {
		x := c.Rate
		if x <= 0 {
			x = c.Driver.StartedPerSecond
		}
		pts = append(pts, point{offered: x, finalized: c.FinalizedPerSecond, p99: c.FinalizeP99Millis / 1000})
	}
	if len(pts) == 0 {
		return fmt.Errorf("loop: no case to chart")
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].offered < pts[j].offered })
	maxX, maxY, maxL := 1.0, 1.0, 1.0
	for _, p := range pts {
		maxX, maxY, maxL = math.Max(maxX, p.offered), math.Max(maxY, p.finalized), math.Max(maxL, p.p99)
	}
	maxX, maxY, maxL = niceCeil(maxX), niceCeil(math.Max(maxY, maxX)), niceCeil(maxL)
	xAt := func(v float64) float64 { return plotLeft + v/maxX*(plotRight-plotLeft) }
	yAt := func(v, top float64) float64 { return plotBottom - v/top*(plotBottom-plotTop) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, svgHeight)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15">Loop benchmark: finalized runs/s and p99 against offered rate</text>`+"\n", plotLeft-50)
	// axes and grid
	fmt.Fprintf(&b, `<path d="M%d %d V%d H%d V%d" fill="none" stroke="#333"/>`+"\n", plotLeft, plotTop, plotBottom, plotRight, plotTop)
	for i := 0; i <= 5; i++ {
		f := float64(i) / 5
		y := plotBottom - f*(plotBottom-plotTop)
		x := plotLeft + f*(plotRight-plotLeft)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, y, plotRight, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", plotLeft-6, y+4, finalizedColor, label(f*maxY))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="%s">%s</text>`+"\n", plotRight+6, y+4, latencyColr, label(f*maxL))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, plotBottom+18, label(f*maxX))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered runs/s</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+40)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="%s">finalized runs/s</text>`+"\n", (plotTop+plotBottom)/2, finalizedColor)
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="%s">p99 admission→finalization (s)</text>`+"\n", svgWidth-16, (plotTop+plotBottom)/2, latencyColr)
	// offered = finalized, the ideal
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 4"/>`+"\n",
		xAt(0), yAt(0, maxY), xAt(math.Min(maxX, maxY)), yAt(math.Min(maxX, maxY), maxY))
	series := func(color string, y func(p point) float64) {
		var d strings.Builder
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xAt(p.offered), y(p))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.TrimSpace(d.String()), color)
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", xAt(p.offered), y(p), color)
		}
	}
	series(finalizedColor, func(p point) float64 { return yAt(p.finalized, maxY) })
	series(latencyColr, func(p point) float64 { return yAt(p.p99, maxL) })
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">● finalized runs/s</text>`+"\n", plotLeft, svgHeight-20, finalizedColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">● p99 admission→finalization (s)</text>`+"\n", plotLeft+160, svgHeight-20, latencyColr)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999">- - finalized = offered</text>`+"\n", plotLeft+380, svgHeight-20)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func label(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
