package pacer

import (
	"context"
	"testing"

	"golang.org/x/time/rate"
)

// BenchmarkPermit sets the permit path beside x/time/rate's: TryAcquire
// against Allow, Acquire+Done against Wait, with limits nothing waits on.
func BenchmarkPermit(b *testing.B) {
	ctx := context.Background()
	b.Run("rate.Allow", func(b *testing.B) {
		lim := rate.NewLimiter(unlimited, unlimited)
		b.ReportAllocs()
		for b.Loop() {
			if !lim.Allow() {
				b.Fatal("refused")
			}
		}
	})
	b.Run("rate.Wait", func(b *testing.B) {
		lim := rate.NewLimiter(unlimited, unlimited)
		b.ReportAllocs()
		for b.Loop() {
			if err := lim.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"rate-only", []Option{WithLimit(PerSecond(unlimited))}},
		{"rate+concurrency", []Option{WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited >> 10)}},
	} {
		tr := New(nil, tc.opts...)
		for _, acquire := range []struct {
			name string
			f    func(context.Context, ...Charge) (*Permit, error)
		}{{"TryAcquire", tr.TryAcquire}, {"Acquire", tr.Acquire}} {
			b.Run("pacer."+acquire.name+"+Done/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p, err := acquire.f(ctx)
					if err != nil {
						b.Fatal(err)
					}
					p.Accept()
				}
			})
		}
	}
}
