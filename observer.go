package pacer

import "github.com/pacer-go/pacer/observe"

// WithObserver adds an observer (see package observe). Observers hear
// every event in the order they were added; a nil observer is ignored.
func WithObserver(o observe.Observer) Option {
	return func(c *config) {
		if o != nil {
			c.observers = append(c.observers, o)
		}
	}
}

// emit tells every observer about e.
func (t *Transport) emit(e observe.Event) {
	for _, o := range t.observers {
		o.Observe(e)
	}
}

// A transportObserver is an observer made by an Option that needs the
// Transport it observes (its clock and store): New binds it before any
// event.
type transportObserver interface {
	observe.Observer
	bind(*Transport)
}
