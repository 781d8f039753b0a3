package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/pacer-go/pacer"
)

// fakeAPI stands in for the provider: it answers every request 200.
func fakeAPI() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
}

// get sends a GET to url in the given workload and returns the status, or
// the error.
func get(client *http.Client, workload, url string) (string, error) {
	ctx := pacer.ContextWithWorkload(context.Background(), workload)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close() // releases the call's concurrency slot
	return resp.Status, nil
}

// The five-minute path: New with the provider's published limit, Err for a
// configuration mistake, Client for an *http.Client, ContextWithWorkload to
// say whose call it is.
func Example() {
	api := fakeAPI()
	defer api.Close()

	transport := pacer.New(nil, // nil: http.DefaultTransport underneath
		pacer.WithLimit(pacer.PerMinute(3500)), // the provider's published limit
		pacer.WithConcurrency(50),              // calls in flight, streams included
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}),
		pacer.WithWorkload("backfill", pacer.Workload{Max: 0.7}),
	)
	if err := transport.Err(); err != nil {
		log.Fatal(err) // a configuration mistake, said plainly
	}
	client := transport.Client()

	status, err := get(client, "interactive", api.URL)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(status)
	// Output: 200 OK
}

// A configuration mistake does not panic: New returns a Transport whose Err
// says what to fix, and whose every request fails with that error.
func ExampleTransport_Err() {
	transport := pacer.New(nil,
		pacer.WithLimit(pacer.PerMinute(3500)),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.6}),
		pacer.WithWorkload("batch", pacer.Workload{Reserve: 0.6}),
	)
	fmt.Println(transport.Err())
	// Output: pacer: invalid configuration: the workloads' reserves add up to 1.2; they must add up to at most 1
}

// Workloads share one limit: a reserve is kept for interactive calls, the
// backfill may use at most 70 % of the limit and has a budget of its own.
// When the budget is spent, the backfill's calls fail at once with
// ErrBudgetExhausted, nothing is sent, and other workloads are unaffected.
func ExampleWithWorkload() {
	api := fakeAPI()
	defer api.Close()

	client := pacer.New(nil,
		pacer.WithLimit(pacer.PerMinute(3500)),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}),
		pacer.WithWorkload("backfill", pacer.Workload{
			Max:    0.7,
			Budget: pacer.Budget{Limit: 2, Per: 24 * time.Hour}, // two calls a day
		}),
	).Client()

	for i := 1; i <= 3; i++ {
		status, err := get(client, "backfill", api.URL)
		var budget *pacer.BudgetError
		switch {
		case errors.As(err, &budget):
			fmt.Printf("backfill call %d: budget of %d spent by %q\n", i, budget.Budget.Limit, budget.Workload)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("backfill call %d: %s\n", i, status)
		}
	}
	status, err := get(client, "interactive", api.URL)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("interactive call:", status)
	// Output:
	// backfill call 1: 200 OK
	// backfill call 2: 200 OK
	// backfill call 3: budget of 2 spent by "backfill"
	// interactive call: 200 OK
}

// The errors pacer returns match sentinels with errors.Is, through the
// *url.Error that http.Client wraps them in. A call whose wait for its turn
// would outlast its context's deadline fails at once, not at the deadline:
// it is a *ThrottledError that matches both ErrThrottled and
// context.DeadlineExceeded.
func ExampleThrottledError() {
	api := fakeAPI()
	defer api.Close()

	// One call a minute, one at a time: the second call's turn is a minute
	// away.
	client := pacer.New(nil, pacer.WithLimit(pacer.Limit{Count: 1, Per: time.Minute, Burst: 1})).Client()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 1; i <= 2; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.URL, nil)
		if err != nil {
			log.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			fmt.Printf("call %d: %s\n", i, resp.Status)
			continue
		}
		var throttled *pacer.ThrottledError
		if errors.As(err, &throttled) {
			// The next turn is 1/0.9 minutes after the first call: pacer
			// keeps the default 10 % headroom below the published limit.
			fmt.Printf("call %d: throttled on scope %q (%s), next turn in %v\n",
				i, throttled.Scope, throttled.Reason, throttled.RetryAfter.Truncate(time.Second))
		}
		fmt.Println("  errors.Is ErrThrottled:", errors.Is(err, pacer.ErrThrottled))
		fmt.Println("  errors.Is context.DeadlineExceeded:", errors.Is(err, context.DeadlineExceeded))
		fmt.Println("  errors.Is ErrBudgetExhausted:", errors.Is(err, pacer.ErrBudgetExhausted))
	}
	// Output:
	// call 1: 200 OK
	// call 2: throttled on scope "default" (rate), next turn in 1m6s
	//   errors.Is ErrThrottled: true
	//   errors.Is context.DeadlineExceeded: true
	//   errors.Is ErrBudgetExhausted: false
}

// A budget's Unit must be one the Transport counts: a typo is an error in
// Err(), not a budget every call passes free. Money is not a Unit: a budget
// in dollars says Spend: prices.Dollars(0.50), and a plain number there does
// not compile.
func ExampleBudget_unit() {
	for _, unit := range []string{"request", "USD", "Requests"} {
		transport := pacer.New(nil, pacer.WithWorkload("backfill", pacer.Workload{
			Budget: pacer.Budget{Limit: 5, Unit: unit, Per: 24 * time.Hour},
		}))
		fmt.Printf("%q: %v\n", unit, transport.Err())
	}
	// Output:
	// "request": pacer: invalid configuration: workload "backfill": Budget.Unit "request" is not a unit this Transport counts, so no call would spend the budget; it counts "requests"; for a unit callers state with ContextWithCost, set Budget.Stated. Did you mean "requests"?
	// "USD": pacer: invalid configuration: workload "backfill": Budget.Unit "USD" is not a unit this Transport counts, so no call would spend the budget; it counts "requests"; for a unit callers state with ContextWithCost, set Budget.Stated. For money, set Spend: prices.Dollars(…) instead of Limit and Unit
	// "Requests": <nil>
}

// A context naming a workload the Transport does not declare fails at once,
// nothing sent: a typo must not escape its workload's budget.
func ExampleContextWithWorkload_undeclared() {
	api := fakeAPI()
	defer api.Close()

	client := pacer.New(nil,
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Limit: 5, Per: 24 * time.Hour}}),
	).Client()
	_, err := get(client, "backfil", api.URL)
	fmt.Println(errors.Unwrap(err)) // the *url.Error's cause
	// Output: pacer: the context names workload "backfil", which this Transport does not declare; nothing was sent. Declared: "backfill", "default". Declare it with WithWorkload, even as Workload{}, if the name is right, or set TakesUndeclared on the workload that should take undeclared names
}

// A Transport that must take any workload's calls, such as one that a
// context shared with other Transports flows through, lets one workload
// take the undeclared names; Stats counts their calls by name.
func ExampleWorkload_takesUndeclared() {
	api := fakeAPI()
	defer api.Close()

	transport := pacer.New(nil,
		pacer.WithWorkload(pacer.DefaultWorkload, pacer.Workload{TakesUndeclared: true}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Limit: 5, Per: 24 * time.Hour}}),
		pacer.WithLogger(slog.New(slog.DiscardHandler)), // it says each undeclared name once
	)
	for range 3 {
		if _, err := get(transport.Client(), "backfil", api.URL); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(transport.Stats().Undeclared)
	// Output: map[backfil:3]
}
