package pacer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/pacer-go/pacer/classify"
)

// mergeVerdicts combines the verdicts of two classifiers, as
// classify.Verdict says.
func mergeVerdicts(v, o classify.Verdict) classify.Verdict {
	// A verdict that concerns every scope wins over one that names some.
	if concernsAll(v) || concernsAll(o) {
		v.Scopes = nil
	} else {
		v.Scopes = append(slices.Clip(v.Scopes), o.Scopes...)
	}
	v.BackPressure = v.BackPressure || o.BackPressure
	v.NeverProcessed = v.NeverProcessed || o.NeverProcessed
	v.Wait = max(v.Wait, o.Wait)
	if v.Quota == "" {
		v.Quota = o.Quota
	}
	return v
}

// concernsAll reports whether v slows every scope of the call: it asks to
// slow down or wait, and names no scopes.
func concernsAll(v classify.Verdict) bool {
	return (v.BackPressure || v.Wait > 0) && len(v.Scopes) == 0
}

// concerns reports whether a rate-limit response with verdict v slows the
// named scope.
func concerns(v classify.Verdict, scope string) bool {
	return len(v.Scopes) == 0 || slices.Contains(v.Scopes, scope)
}

// maxClassifiedBody is how much of an error response's body classifiers see.
const maxClassifiedBody = 8 << 10

// WithClassifier adds a classifier for error responses (status 400 and
// above): see package classify. Provider presets use it; verdicts of
// several classifiers combine. classify.BackPressure(statuses...) names
// statuses, beyond 429, that mean the provider wants fewer calls.
func WithClassifier(c classify.Func) Option {
	return func(cfg *config) {
		if c == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithClassifier: the classifier must not be nil"))
			return
		}
		cfg.classifiers = append(cfg.classifiers, c)
	}
}

// classify runs the Transport's classifiers over an error response. The
// body's first bytes are read for them and put back in front of the rest.
// It reports whether the body stalled: then it is worth closing, not
// draining, if the response is not handed back.
func (t *Transport) classify(ctx context.Context, resp *http.Response) (v classify.Verdict, stalled bool) {
	if len(t.classifiers) == 0 || resp.StatusCode < 400 {
		return classify.Verdict{}, false
	}
	var head []byte
	if resp.Body != nil && resp.Body != http.NoBody {
		head, resp.Body, stalled = t.peek(ctx, resp.Body)
	}
	for _, c := range t.classifiers {
		v = mergeVerdicts(v, c(resp, bytes.Clone(head)))
	}
	return v, stalled
}

// classifyWait is how long a call waits, at most, for the first bytes of
// an error response's body for its classifiers, when its context allows
// longer. A plain transport hands the response back at its headers; a
// server that stalls the body must not hold the call much past that.
const classifyWait = time.Second

// peek reads the first maxClassifiedBody bytes of body for the classifiers.
// It waits for them until the request's context ends or classifyWait has
// passed, whichever is first; then the classifiers see no body. It returns
// what it read, the body to hand back, which gives the caller every byte
// (the head, then the rest), and whether it stopped waiting.
//
// A Reader cannot be interrupted, so the read runs on a goroutine of its
// own: only for an error response, with classifiers set.
func (t *Transport) peek(ctx context.Context, body io.ReadCloser) (head []byte, rest io.ReadCloser, stalled bool) {
	p := &peeking{rest: body, done: make(chan struct{})}
	go p.read()
	timer := t.clock.NewTimer(classifyWait)
	defer timer.Stop()
	select {
	case <-p.done:
		if p.err != nil {
			return p.head, p, false
		}
		return p.head, peekedBody{io.MultiReader(bytes.NewReader(p.head), body), body}, false
	case <-ctx.Done():
	case <-timer.C():
	}
	return nil, p, true
}

// peeking is a body whose first bytes are being read ahead on another
// goroutine: a Read waits for them, then reads them again, then the rest.
type peeking struct {
	rest io.ReadCloser
	done chan struct{} // closed when head and err are set
	head []byte
	err  error // the read-ahead's error, handed back after the head
	r    io.Reader
}

func (p *peeking) read() {
	p.head, p.err = io.ReadAll(io.LimitReader(p.rest, maxClassifiedBody))
	close(p.done)
}

func (p *peeking) Read(b []byte) (int, error) {
	if p.r == nil {
		<-p.done
		rest := p.rest.(io.Reader)
		if p.err != nil {
			rest = errReader{p.err}
		}
		p.r = io.MultiReader(bytes.NewReader(p.head), rest)
	}
	return p.r.Read(b)
}

// Close closes the body, which ends the read ahead of a connection's body.
func (p *peeking) Close() error { return p.rest.Close() }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// peekedBody is a body whose first bytes were read ahead: it reads them
// again, then the rest, and closes the original.
type peekedBody struct {
	io.Reader
	io.Closer
}
