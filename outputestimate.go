package pacer

import "github.com/pacer-go/pacer/internal/outputs"

// outputLearner learns the output of a Transport's calls per model, so
// that a metered call reserves its likely cost (internal/outputs says
// how). It is outputs.Learner under the names the meter calls it by.
type outputLearner outputs.Learner

// estimate returns the learned output of model's calls, or false while
// there is none; see outputs.Learner.Estimate.
func (l *outputLearner) estimate(model string) (int64, bool) {
	return (*outputs.Learner)(l).Estimate(model)
}

// observe records that a call to model produced n output tokens.
func (l *outputLearner) observe(model string, n int64) {
	(*outputs.Learner)(l).Observe(model, n)
}
