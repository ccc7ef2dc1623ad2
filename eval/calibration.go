package eval

import (
	"fmt"
	"math"
	"strings"
)

// calibrationBins is the number of equal-width confidence bins of the
// calibration measures (the usual 10).
const calibrationBins = 10

// Calibration measures how well a model's whole-state confidence
// (ndbg.Confidence.State) predicts exact match: among the predictions made
// with confidence about c, a calibrated model is right about a fraction c
// of the time. Only predictions that carry a confidence count (a neural
// backend's; not the real backend's, nor a failed prediction).
type Calibration struct {
	// N is the number of predictions with a confidence.
	N int `json:"n"`
	// ECE is the expected calibration error: the mean over the bins of
	// |exact-match rate − mean confidence|, weighted by each bin's share of
	// the predictions (in [0, 1]).
	ECE  float64  `json:"ece"`
	Bins []CalBin `json:"bins"`
}

// CalBin is one confidence bin [Lo, Hi) (the last holds 1 too).
type CalBin struct {
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	N       int     `json:"n"`
	Conf    float64 `json:"confidence"`  // mean confidence (0 when N is 0)
	Correct int     `json:"exact_match"` // predictions whose whole state was right
}

// add counts one prediction of confidence c that was (not) right.
func (c *Calibration) add(conf float64, right bool) {
	if len(c.Bins) == 0 {
		c.Bins = make([]CalBin, calibrationBins)
		for i := range c.Bins {
			c.Bins[i].Lo, c.Bins[i].Hi = float64(i)/calibrationBins, float64(i+1)/calibrationBins
		}
	}
	b := min(int(conf*calibrationBins), calibrationBins-1)
	b = max(b, 0)
	bin := &c.Bins[b]
	bin.Conf = (bin.Conf*float64(bin.N) + conf) / float64(bin.N+1)
	bin.N++
	bin.Correct += b2i(right)
	c.N++
	c.ECE = 0
	for _, x := range c.Bins {
		if x.N > 0 {
			c.ECE += float64(x.N) / float64(c.N) * math.Abs(float64(x.Correct)/float64(x.N)-x.Conf)
		}
	}
}

// chart is the reliability diagram: per confidence bin, the exact-match
// rate beside the mean confidence (equal on a calibrated model), in percent.
func (c *Calibration) chart() *Chart {
	ch := &Chart{Title: fmt.Sprintf("Reliability (ECE %.3f, n=%d)", c.ECE, c.N),
		XLabel: "confidence bin", YLabel: "%", Bars: true}
	exact, conf := Series{Name: "exact match"}, Series{Name: "mean confidence"}
	for _, b := range c.Bins {
		ch.X = append(ch.X, fmt.Sprintf("%.0f-%.0f", 100*b.Lo, 100*b.Hi))
		if b.N == 0 {
			exact.Values, conf.Values = append(exact.Values, math.NaN()), append(conf.Values, math.NaN())
			continue
		}
		exact.Values = append(exact.Values, pct(b.Correct, b.N))
		conf.Values = append(conf.Values, 100*b.Conf)
	}
	ch.Series = []Series{exact, conf}
	return ch
}

// markdown is the report's calibration section.
func (c *Calibration) markdown(withChart bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Calibration\n\nThe whole-state confidence (the model's probability of the predicted frame: the product of its tokens' probabilities under the grammar-constrained distribution, `ndbg.Confidence`) against whole-state exact match, over %d predictions: ", c.N)
	fmt.Fprintf(&b, "expected calibration error (ECE, %d equal-width bins) **%.3f**.\n\n", calibrationBins, c.ECE)
	b.WriteString("| confidence | n | mean confidence | exact match |\n|---|---|---|---|\n")
	for _, x := range c.Bins {
		if x.N == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %.1f-%.1f | %d | %.3f | %s |\n", x.Lo, x.Hi, x.N, x.Conf, cell(x.Correct, x.N))
	}
	if withChart {
		b.WriteString("\n![reliability diagram](reliability.png)\n")
	}
	return b.String()
}
