package observe_test

import (
	"fmt"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
)

// An Observer can be a plain function; it hears every event, on the
// request's goroutine.
func ExampleFunc() {
	changed := observe.Func(func(e observe.Event) {
		if e.Kind == observe.EventLimitChanged {
			fmt.Printf("%s: %v -> %v (%s)\n", e.Scope, e.Previous, e.Limit, e.Origin)
		}
	})
	tr := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(10)), pacer.WithObserver(changed))
	if err := tr.SetLimit(pacer.DefaultScope, pacer.Limit{Count: 5, Per: time.Second, Burst: 2}); err != nil {
		fmt.Println(err)
	}
	// Output: default: 10/1s -> 5/1s burst 2 (set_limit)
}
