package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/opentreasury/treasury/projections/queries"
)

// chartPoints is how many of an account's latest balances its chart draws.
const chartPoints = 200

// chart is an account's posted balance over time, drawn on the server as
// an SVG step line (no script, no external asset), with a summary for
// screen readers: the figures are in the transactions table below it.
type chart struct {
	SVG     template.HTML
	Summary string
	Empty   bool
}

const (
	chartW, chartH = 640.0, 180.0
	padL, padR     = 84.0, 12.0
	padT, padB     = 12.0, 28.0
)

func balanceChart(points []queries.BalancePoint, now time.Time) chart {
	if len(points) == 0 {
		return chart{Empty: true}
	}
	lo, hi := int64(0), points[0].Balance
	for _, p := range points {
		lo, hi = min(lo, p.Balance), max(hi, p.Balance)
	}
	if hi == lo {
		hi = lo + 100
	}
	start, end := points[0].At, now
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	x := func(t time.Time) float64 {
		return padL + (chartW-padL-padR)*float64(t.Sub(start))/float64(end.Sub(start))
	}
	y := func(b int64) float64 {
		return padT + (chartH-padT-padB)*(1-float64(b-lo)/float64(hi-lo))
	}
	var path strings.Builder
	fmt.Fprintf(&path, "M%.1f %.1f", x(points[0].At), y(points[0].Balance))
	for i := 1; i < len(points); i++ { // a step: the balance holds until the next entry
		fmt.Fprintf(&path, " H%.1f V%.1f", x(points[i].At), y(points[i].Balance))
	}
	fmt.Fprintf(&path, " H%.1f", x(end))
	last := points[len(points)-1]
	svg := fmt.Sprintf(`<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="chart-title" data-testid="balance-chart" data-points="%d">`+
		`<title id="chart-title">Posted balance from %s to now: %s now, between %s and %s</title>`+
		`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+
		`<text x="%.1f" y="%.1f" text-anchor="end">%s</text><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+
		`<text x="%.1f" y="%.1f">%s</text><text x="%.1f" y="%.1f" text-anchor="end">now</text>`+
		`<path class="line" d="%s"/></svg>`,
		chartW, chartH, len(points),
		start.UTC().Format("2006-01-02 15:04"), money(last.Balance), money(lo), money(hi),
		padL, y(lo), chartW-padR, y(lo),
		padL-6, y(hi)+4, money(hi), padL-6, y(lo)+4, money(lo),
		padL, chartH-8, start.UTC().Format("Jan 2 15:04"), chartW-padR, chartH-8,
		path.String())
	return chart{SVG: template.HTML(svg), Summary: fmt.Sprintf("%d balances since %s", len(points), start.UTC().Format("2006-01-02 15:04 UTC"))}
}
