package pacergrpc

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// healthServer answers Check with reply, counting the calls that reach it,
// and streams Watch from grpc's own health server.
type healthServer struct {
	*health.Server
	calls atomic.Int32
	reply func(ctx context.Context) (*healthpb.HealthCheckResponse, error)
}

func (h *healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.calls.Add(1)
	if h.reply != nil {
		return h.reply(ctx)
	}
	return h.Server.Check(ctx, req)
}

// serve starts a real gRPC server on loopback and returns a client
// connection through tr's interceptors.
func serve(t *testing.T, tr *pacer.Transport) (*healthServer, healthpb.HealthClient) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := &healthServer{Server: health.NewServer()}
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(UnaryClientInterceptor(tr)), grpc.WithStreamInterceptor(StreamClientInterceptor(tr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return hs, healthpb.NewHealthClient(conn)
}

// stillClock stands still, so that a wait pacer reports is exactly the one
// the server asked for; the tests never wait on it.
type stillClock struct{ now time.Time }

func (c stillClock) Now() time.Time                       { return c.now }
func (c stillClock) NewTimer(d time.Duration) clock.Timer { return clock.System.NewTimer(d) }

func frozen() clock.Clock { return stillClock{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)} }

// A RESOURCE_EXHAUSTED with RetryInfo pauses the scope for every caller,
// as a 429 with Retry-After does; the next call is refused before it is
// sent, and says how long to wait.
func TestUnaryRejectionPausesScope(t *testing.T) {
	tr := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(100)), clock.With[pacer.Option](frozen()))
	hs, client := serve(t, tr)
	hs.reply = func(context.Context) (*healthpb.HealthCheckResponse, error) {
		st, _ := status.New(codes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)})
		return nil, st.Err()
	}
	ctx := context.Background()
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("err = %v, want the server's RESOURCE_EXHAUSTED", err)
	}
	_, err := client.Check(pacer.ContextWithCall(ctx, pacer.Call{FailFast: true}), &healthpb.HealthCheckRequest{})
	var te *pacer.ThrottledError
	if !errors.As(err, &te) || te.Reason != observe.ReasonCooldown || te.RetryAfter != 2*time.Second {
		t.Fatalf("the call after the rejection: err = %v, want a 2s cooldown", err)
	}
	if n := hs.calls.Load(); n != 1 {
		t.Errorf("%d calls reached the server, want 1: the paused call must not be sent", n)
	}
}

// UNAVAILABLE with a retry pushback is a rejection too; without one it
// teaches nothing.
func TestUnaryUnavailablePushback(t *testing.T) {
	tr := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(100)), clock.With[pacer.Option](frozen()))
	hs, client := serve(t, tr)
	pushback := "1500"
	hs.reply = func(ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		if pushback != "" {
			grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", pushback))
		}
		return nil, status.Error(codes.Unavailable, "shedding")
	}
	ctx := pacer.ContextWithCall(context.Background(), pacer.Call{FailFast: true})
	pushback = ""
	client.Check(ctx, &healthpb.HealthCheckRequest{})
	if _, err := tr.TryAcquire(ctx); err != nil {
		t.Fatalf("a bare UNAVAILABLE paused the scope: %v", err)
	}
	pushback = "1500"
	client.Check(ctx, &healthpb.HealthCheckRequest{})
	var te *pacer.ThrottledError
	if _, err := tr.TryAcquire(ctx); !errors.As(err, &te) || te.RetryAfter != 1500*time.Millisecond {
		t.Errorf("after a pushback of 1500ms: err = %v, want a 1.5s cooldown", err)
	}
}

// A call refused by pacer never reaches the server, and a stream holds its
// slot until it ends.
func TestConcurrencyAcrossUnaryAndStream(t *testing.T) {
	tr := pacer.New(nil, pacer.WithConcurrency(1))
	hs, client := serve(t, tr)
	ctx, cancel := context.WithCancel(context.Background())
	watch, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	_, err = client.Check(pacer.ContextWithCall(context.Background(), pacer.Call{FailFast: true}), &healthpb.HealthCheckRequest{})
	if !errors.Is(err, pacer.ErrThrottled) || hs.calls.Load() != 0 {
		t.Fatalf("a unary call beside an open stream on one slot: err = %v, %d sent; want ErrThrottled, none sent", err, hs.calls.Load())
	}
	cancel()
	if _, err := watch.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel: %v", err)
	}
	resp, err := client.Check(pacer.ContextWithCall(context.Background(), pacer.Call{FailFast: true}), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("after the stream ended: %v, %v", resp, err)
	}
	if p, err := tr.TryAcquire(context.Background()); err != nil {
		t.Errorf("the unary call kept its slot: %v", err)
	} else {
		p.Accept()
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		md   metadata.MD
		want outcomeKind
		wait time.Duration
	}{
		{nil, nil, accepted, 0},
		{status.Error(codes.ResourceExhausted, ""), nil, rejected, 0},
		{status.Error(codes.Unavailable, ""), nil, dropped, 0},
		{status.Error(codes.Unavailable, ""), metadata.Pairs("grpc-retry-pushback-ms", "-1"), dropped, 0},
		{status.Error(codes.Unavailable, ""), metadata.Pairs("grpc-retry-pushback-ms", "99999999999999999"), rejected, 24 * time.Hour},
		{status.Error(codes.InvalidArgument, ""), nil, dropped, 0},
		{errors.New("not a status"), nil, dropped, 0},
	} {
		if got, wait := outcome(tc.err, tc.md); got != tc.want || wait != tc.wait {
			t.Errorf("outcome(%v, %v) = %v, %v; want %v, %v", tc.err, tc.md, got, wait, tc.want, tc.wait)
		}
	}
}
