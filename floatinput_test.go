package pacer

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pacer-go/pacer/retry"
	"github.com/pacer-go/pacer/usage/prices"
)

// Every float a caller configures is refused at New, and at SetWorkload,
// when it is NaN or infinite (or out of its range), with an error naming
// the field; a refused SetWorkload changes nothing. (Limit has no float
// field; the tenant weight, a per-call value, is clamped: see
// TestTenantWeightRange.)
func TestFloatInputsNaNAndInf(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	var rows []struct {
		name string
		opt  Option
		w    *Workload // also tried with SetWorkload
		want string
	}
	add := func(name string, opt Option, w *Workload, want string) {
		rows = append(rows, struct {
			name string
			opt  Option
			w    *Workload
			want string
		}{name, opt, w, want})
	}
	for _, x := range []float64{nan, inf, -inf} {
		for _, w := range []struct {
			field string
			w     Workload
		}{{"Reserve", Workload{Reserve: x}}, {"Max", Workload{Max: x}}} {
			add("Workload."+w.field+"="+fmt.Sprint(x), WithWorkload("w", w.w), &w.w, w.field)
		}
		add("WithHeadroom="+fmt.Sprint(x), WithHeadroom(x), nil, "WithHeadroom")
		add("retry.Budget.Ratio="+fmt.Sprint(x), WithRetry(retry.Policy{Budget: retry.Budget{Ratio: x}}), nil, "Ratio")
		price := prices.Price{Input: prices.Dollars(x), Output: prices.Micros(1), Source: "test", Read: "2026-12-01"}
		add("prices.Dollars("+fmt.Sprint(x)+")", WithPrices(prices.Table{"m": price}), nil, "not a number of dollars")
	}
	add("prices.Dollars(1e13)", WithPrices(prices.Table{"m": {Input: prices.Dollars(1e13), Source: "test", Read: "2026-12-01"}}), nil, "not a number of dollars")
	for _, r := range rows {
		err := New(nil, r.opt).Err()
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("New with %s: err = %v, want an error naming %q", r.name, err, r.want)
		}
		if r.w == nil {
			continue
		}
		tr := New(nil, WithWorkload("w", Workload{}))
		mustNotErr(t, tr.Err())
		if err := tr.SetWorkload("w", *r.w); err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("SetWorkload with %s: err = %v, want an error naming %q", r.name, err, r.want)
		}
		sh := tr.scopes[DefaultScope].shares.Load()
		if i := tr.workloads["w"].index; sh.reserve[i] != 0 || sh.max[i] != 0 {
			t.Errorf("a refused SetWorkload with %s changed the shares: reserve %v, max %v", r.name, sh.reserve[i], sh.max[i])
		}
	}
}
