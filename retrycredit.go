package pacer

import "github.com/pacer-go/pacer/retry"

// earnRetry credits the scope with a first attempt's share of a retry.
func (c *configuredScope) earnRetry(b retry.Budget) {
	for {
		credit := c.retryCredit.Load()
		next := min(credit+int64(b.Ratio*retryUnit), int64(b.Min)*retryUnit)
		if next <= credit || c.retryCredit.CompareAndSwap(credit, next) {
			return
		}
	}
}

// spendRetry takes one retry from the scope's budget, if it has one.
func (c *configuredScope) spendRetry() bool {
	for {
		credit := c.retryCredit.Load()
		if credit < retryUnit {
			return false
		}
		if c.retryCredit.CompareAndSwap(credit, credit-retryUnit) {
			return true
		}
	}
}

// retryUnit is one retry in the fixed-point credit, fine enough for any Ratio.
const retryUnit = 1_000_000
