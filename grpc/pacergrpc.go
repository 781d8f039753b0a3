// Package pacergrpc paces gRPC client calls with a pacer.Transport: a unary
// and a stream client interceptor that acquire a pacer.Permit for each call
// and end it with what the call's status teaches.
//
// The call goes through the Transport's admission as an HTTP request
// would: its workload, tenant, cost and overrides come from the call's
// context (pacer.ContextWithWorkload and the like), and a call that cannot
// be admitted in time fails with pacer's *ThrottledError or *BudgetError,
// before anything is sent. A call's permit runs no Meter, on a Transport
// with a preset too: on a workload whose budget counts tokens or money, a
// call states its cost with pacer.ContextWithCost (ContextWithSpend for
// money, or a charge, see WithCharges), or it is refused at once (see pacer.Permit). When it ends:
//
//   - OK, and any status that says nothing of limits, teaches success or
//     nothing (see outcome);
//   - RESOURCE_EXHAUSTED is a rejection, as a 429: with a wait from the
//     status's google.rpc.RetryInfo or the grpc-retry-pushback-ms trailer,
//     it pauses the Transport's scopes for every caller until then;
//     without one, it cuts their rate;
//   - UNAVAILABLE with such a wait is a rejection too (a server shedding
//     load); without one, a connection's failure, which teaches nothing.
//
// A stream holds its permit until it ends: RecvMsg returns an error (io.EOF
// for a clean end) or the call's context ends. A stream abandoned without
// either holds its concurrency slot, as an unclosed HTTP body does.
package pacergrpc

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/pacer-go/pacer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// An Option configures an interceptor.
type Option func(*config)

type config struct {
	charges func(method string) []pacer.Charge
}

// WithCharges sets the charges of each call, by its full method name
// ("/pkg.Service/Method"): the gRPC counterpart of a pacer.Route. The
// default charges one request to pacer.DefaultScope.
func WithCharges(f func(method string) []pacer.Charge) Option {
	return func(c *config) { c.charges = f }
}

func newConfig(opts []Option) config {
	c := config{charges: func(string) []pacer.Charge { return nil }}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// UnaryClientInterceptor returns an interceptor that admits each unary
// call through t and ends its permit with the call's status.
func UnaryClientInterceptor(t *pacer.Transport, opts ...Option) grpc.UnaryClientInterceptor {
	cfg := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		p, err := t.Acquire(ctx, cfg.charges(method)...)
		if err != nil {
			return err
		}
		var trailer metadata.MD
		err = invoker(ctx, method, req, reply, cc, append(callOpts, grpc.Trailer(&trailer))...)
		end(p, err, trailer)
		return err
	}
}

// StreamClientInterceptor returns an interceptor that admits each stream
// through t and ends its permit when the stream ends.
func StreamClientInterceptor(t *pacer.Transport, opts ...Option) grpc.StreamClientInterceptor {
	cfg := newConfig(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		p, err := t.Acquire(ctx, cfg.charges(method)...)
		if err != nil {
			return nil, err
		}
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil {
			end(p, err, nil)
			return nil, err
		}
		s := &stream{ClientStream: cs, permit: p}
		// A stream whose context ends is over, read to its end or not.
		s.stop = context.AfterFunc(ctx, func() { s.end(ctx.Err()) })
		return s, nil
	}
}

type stream struct {
	grpc.ClientStream
	permit *pacer.Permit
	stop   func() bool
	once   sync.Once
}

func (s *stream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.end(err)
	}
	return err
}

func (s *stream) end(err error) {
	s.once.Do(func() {
		s.stop()
		if errors.Is(err, io.EOF) {
			err = nil
		}
		end(s.permit, err, s.Trailer())
	})
}

// end ends a call's permit by what its end teaches pacer.
func end(p *pacer.Permit, err error, trailer metadata.MD) {
	switch o, wait := outcome(err, trailer); o {
	case accepted:
		p.Accept()
	case rejected:
		p.Reject(wait)
	default:
		p.Drop()
	}
}

// An outcomeKind is how a call's permit ends (pacer.Permit's Accept, Reject
// or Drop).
type outcomeKind int

const (
	dropped outcomeKind = iota
	accepted
	rejected
)

// outcome says what a call's end teaches pacer, and for a rejection the
// wait the server asked for.
func outcome(err error, trailer metadata.MD) (outcomeKind, time.Duration) {
	st, ok := status.FromError(err)
	if !ok {
		return dropped, 0 // not a status: the call failed before it was made
	}
	wait, said := retryWait(st, trailer)
	switch code := st.Code(); {
	case code == codes.OK:
		return accepted, 0
	case code == codes.ResourceExhausted, code == codes.Unavailable && said:
		return rejected, wait
	}
	return dropped, 0
}

const maxPushbackMs = int64(24 * time.Hour / time.Millisecond)

// retryWait returns the wait the server asked for: google.rpc.RetryInfo in
// the status's details, else gRPC's retry pushback trailer. A negative
// pushback means "do not retry", which pacer cannot honour by waiting: it
// is taken as no wait.
func retryWait(st *status.Status, trailer metadata.MD) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return max(ri.GetRetryDelay().AsDuration(), 0), true
		}
	}
	if v := trailer.Get("grpc-retry-pushback-ms"); len(v) > 0 {
		if ms, err := strconv.ParseInt(v[0], 10, 64); err == nil && ms >= 0 {
			// Clamped before the multiplication can overflow; pacer caps
			// every wait at the Transport's WithMaxWait anyway.
			return time.Duration(min(ms, maxPushbackMs)) * time.Millisecond, true
		}
	}
	return 0, false
}
