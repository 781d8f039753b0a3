package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/storeguard"
	"github.com/pacer-go/pacer/store"
)

// slowStore is a memory store whose writes (refunds, adjustments, clamps)
// take delay to answer, or fail while it is down. Takes answer at once.
type slowStore struct {
	*store.Memory
	delay time.Duration
	down  atomic.Bool
}

var errStoreGone = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (s *slowStore) HonoursContext() bool { return true }

func (s *slowStore) wait(ctx context.Context) error {
	if s.down.Load() {
		return errStoreGone
	}
	select {
	case <-time.After(s.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	if s.down.Load() {
		return store.Decision{}, errStoreGone
	}
	return s.Memory.Take(ctx, now, ds)
}

func (s *slowStore) Refund(ctx context.Context, now time.Time, ds []store.Demand) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Memory.Refund(ctx, now, ds)
}

func (s *slowStore) Adjust(ctx context.Context, now time.Time, ds []store.Demand) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Memory.Adjust(ctx, now, ds)
}

func (s *slowStore) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Memory.Clamp(ctx, now, d, tokens)
}

// flushSetup is a Transport over s with a budget of 10,000 tokens on the
// backfill, whose calls reserve 300 and are billed 100.
func flushSetup(t *testing.T, s *slowStore) (*Transport, func() float64) {
	t.Helper()
	tr := New(&fakeLLM{reply: llmReply{input: 40, output: 60}}, WithMeter(testMeter()), WithStore(s, store.Policy{}),
		WithWorkload("backfill", Workload{Budget: Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	spent := func() float64 {
		l, _ := s.Level(context.Background(), time.Now(), tr.workloads["backfill"].budget)
		return 10_000 - l
	}
	return tr, spent
}

// A slow store: the settlements wait in the queue; a Flush whose context
// ends first says how many are still queued; one given time enough sends
// them, and the store counts what the calls were billed.
func TestFlushSlowStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slowStore{Memory: store.NewMemory(), delay: 300 * time.Millisecond}
		tr, spent := flushSetup(t, s)
		backfill := ContextWithWorkload(context.Background(), "backfill")
		for range 3 {
			mustNotErr(t, chatAll(t, tr, backfill))
		}
		if got := spent(); got != 3*(estIn+estOut) {
			t.Fatalf("before the settlements are sent, the store counts %v, want the reservations, %v", got, 3*(estIn+estOut))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := tr.Flush(ctx)
		var fe *FlushError
		if !errors.As(err, &fe) || fe.Pending == 0 || fe.Lost != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush with 100ms for a store that takes 300ms: %v; want a *FlushError with writes pending, matching DeadlineExceeded", err)
		}
		t.Log(err)
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Flush(ctx); err != nil {
			t.Fatalf("Flush with time enough: %v", err)
		}
		if got := spent(); got != 3*100 {
			t.Errorf("after Flush, the store counts %v, want what was billed, %v", got, 3*100)
		}
	})
}

// A store that went down: the settlements cannot reach it, and Flush says
// how many were lost, once.
func TestFlushStoreDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slowStore{Memory: store.NewMemory()}
		tr, _ := flushSetup(t, s)
		backfill := ContextWithWorkload(context.Background(), "backfill")
		for range 2 {
			s.down.Store(false)
			time.Sleep(storeguard.MaxRetry) // the guard asks the store again
			resp, err := chat(t, tr, backfill, "")
			mustNotErr(t, err)
			s.down.Store(true) // after the take, before the settlement
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			synctest.Wait()
		}
		err := tr.Flush(context.Background())
		var fe *FlushError
		if !errors.As(err, &fe) || fe.Lost != 2 || fe.Pending != 0 || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Flush after two settlements the store could not take: %v; want a *FlushError with 2 lost, matching store.ErrUnavailable", err)
		}
		t.Log(err)
		if err := tr.Flush(context.Background()); err != nil {
			t.Errorf("a second Flush: %v; want nil, the losses were reported", err)
		}
	})
}

// Without a shared store, there is nothing to flush.
func TestFlushMemoryStore(t *testing.T) {
	if err := New(nil).Flush(context.Background()); err != nil {
		t.Error(err)
	}
}

// A nil context is a mistake the caller hears about, not a panic or a
// wait without end, whatever the store.
func TestFlushNilContext(t *testing.T) {
	for _, tr := range []*Transport{New(nil), New(nil, WithStore(&slowStore{Memory: store.NewMemory()}, store.Policy{}))} {
		//lint:ignore SA1012 a nil context is the input under test
		if err := tr.Flush(nil); err == nil || !strings.Contains(err.Error(), "needs a context") {
			t.Errorf("Flush(nil) = %v, want an error saying it needs a context", err)
		}
	}
}

// Before the process exits, send what the Transport still has queued for
// its shared store, for at most five seconds.
func ExampleTransport_Flush() {
	tr := New(nil) // with WithStore(redisstore.New(...), store.Policy{}) in a fleet
	// ... the process's calls ...
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Flush(ctx); err != nil {
		fmt.Println(err) // what the fleet's shared counts miss
		return
	}
	fmt.Println("flushed")
	// Output: flushed
}
