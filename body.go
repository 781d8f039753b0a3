package pacer

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/pacer-go/pacer/usage"
)

// meteredBody is the body of a response whose usage a Meter reads: the
// bytes pass to the caller as they come, and the reader sees each once.
// Only LLM responses get one; every other body is a releasingBody.
type meteredBody struct {
	io.ReadCloser
	call *call
	req  *http.Request // for a report of an implausible usage
	done atomic.Bool
	// mu serializes the reader, which is not safe for concurrent use,
	// between a Read and a Close from another goroutine.
	mu sync.Mutex
	r  usage.Reader
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.mu.Lock()
		b.r.Observe(p[:n])
		b.mu.Unlock()
	}
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *meteredBody) Close() error {
	defer b.release()
	return b.ReadCloser.Close()
}

// release settles the call on what was read, and finishes it, once.
func (b *meteredBody) release() {
	if b.done.CompareAndSwap(false, true) {
		b.mu.Lock()
		u, final := b.r.End()
		var cut usage.Streamed
		counted := false
		if sc, ok := b.r.(usage.Counter); ok && !final {
			cut, counted = sc.Streamed()
		}
		b.mu.Unlock()
		if c := b.call; final && c.metered.on {
			if c.metered.implausible(u) {
				c.reportImplausible(b.req, u)
			} else {
				c.t.meter.outputs.observe(c.metered.model, u.Output)
			}
		}
		if counted {
			b.call.settleCut(cut)
		} else {
			b.call.settle(u, final, false)
		}
		b.call.finish()
	}
}

// releasingBody is a response body that ends its call, releasing the call's
// slots, exactly once: when the body is closed or read to its end, whichever
// comes first, from whichever goroutine.
type releasingBody struct {
	io.ReadCloser
	call *call
	done atomic.Bool
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	defer b.release()
	return b.ReadCloser.Close()
}

func (b *releasingBody) release() {
	if b.done.CompareAndSwap(false, true) {
		b.call.finish()
	}
}

// releasingReadWriteBody keeps the io.Writer of a 101 Switching Protocols
// response's body, which net/http's callers rely on.
type releasingReadWriteBody struct {
	*releasingBody
	io.Writer
}

// wrapBody returns rc wrapped so that closing it, or reading it to its end,
// finishes c.
func wrapBody(rc io.ReadCloser, c *call) io.ReadCloser {
	b := &releasingBody{ReadCloser: rc, call: c}
	if w, ok := rc.(io.Writer); ok {
		return releasingReadWriteBody{b, w}
	}
	return b
}
