package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// A Network is the condition a run's calls travel in: the round trip added
// below every client (and the neighbour), how many callers keep calls in
// flight, and whether every CPU is busy with other work.
type Network struct {
	Name string `json:"name"`
	// Delay, when positive, is added each way to every call: before the
	// request is sent and again once its response's headers are back,
	// before the client sees them. Jitter adds up to that much more, drawn
	// afresh, uniformly, for each way of each call, so answers arrive out
	// of order. The server sees the request and decides when it arrives;
	// its headers describe its state then, as a real provider's do.
	Delay  time.Duration `json:"delay_ns"`
	Jitter time.Duration `json:"jitter_ns"`
	// Goroutines, when positive, replaces the run's number of callers.
	Goroutines int `json:"goroutines"`
	// Busy, when set, keeps every CPU busy for the run: a separate process
	// (this executable, again) spins GOMAXPROCS goroutines from before the
	// server starts until the run has ended.
	Busy bool `json:"busy"`
}

// The matrix's networks.
var (
	Loopback  = Network{Name: "loopback"}
	RoundTrip = Network{Name: "200–400 ms round trip", Delay: 100 * time.Millisecond, Jitter: 100 * time.Millisecond, Goroutines: 64}
	BusyHost  = Network{Name: "busy host", Busy: true}
)

// window is the part of a run of d in which the server can take calls whose
// answers arrive within the run: d less the fixed delay each way, so that
// the ceiling is one some client could reach.
func (n Network) window(d time.Duration) time.Duration {
	return max(0, d-2*n.Delay)
}

// delay is a Network's delay, one way.
func (n Network) delay() time.Duration {
	d := n.Delay
	if n.Jitter > 0 {
		d += rand.N(n.Jitter)
	}
	return d
}

// ways is a Network's delays for one call: one way's, then the other's.
func (n Network) ways() (out, back time.Duration) { return n.delay(), n.delay() }

// delayed adds a delay each way to every call through next: ways gives
// each call's two, the one before the request is sent and the one before
// its response is returned.
type delayed struct {
	ways func() (out, back time.Duration)
	next http.RoundTripper
}

// RoundTrip waits one way's delay, sends req, and waits the other's before
// returning the response; a context done while waiting ends the call with
// its error (and closes a response already back).
func (d delayed) RoundTrip(req *http.Request) (*http.Response, error) {
	out, back := d.ways()
	if err := sleepCtx(req.Context(), out); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := d.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if err := sleepCtx(req.Context(), back); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// envSpin makes this executable, started by the harness, a CPU spinner
// (see startBusy).
const envSpin = "PACER_BENCH_SPIN"

// maybeSpin makes this process the busy host's spinner, and exits, when
// startBusy started it: GOMAXPROCS goroutines spin until its standard input
// closes, which it does when the harness stops it or exits.
func maybeSpin() {
	if os.Getenv(envSpin) == "" {
		return
	}
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for x := uint64(1); ; x = x*6364136223846793005 + 1442695040888963407 {
			}
		}()
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startBusy starts the spinner, and returns the function that stops it.
func startBusy() (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envSpin+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the busy host's spinner: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return func() {
		in.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}, nil
}
