package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/pgstore"
	"github.com/pacer-go/pacer/storetest"
)

// stallProxy forwards TCP connections to a server. Armed with a trigger,
// it drops the first chunk a client sends that contains the trigger, and
// everything after it on that connection: the server never hears the
// message, and the client waits for an answer that never comes, as it does
// when a network path stalls mid-conversation.
type stallProxy struct {
	ln      net.Listener
	backend string

	wg      sync.WaitGroup
	mu      sync.Mutex
	trigger []byte
	stalled int // connections stalled so far
	conns   []net.Conn
}

// startProxy starts a proxy to backend. The caller closes it.
func startProxy(t *testing.T, backend string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, backend: backend}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(c, s); c.Close() })
			p.wg.Go(func() { p.forward(s, c); s.Close() })
		}
	})
	return p
}

// close closes every connection, which ends whatever they stalled, and
// waits for the proxy's goroutines.
func (p *stallProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// forward copies what the client sends to the server until the client
// sends the trigger; from then on it reads and drops.
func (p *stallProxy) forward(server, client net.Conn) {
	buf := make([]byte, 64<<10)
	stalled := false
	for {
		n, err := client.Read(buf)
		if n > 0 && !stalled {
			p.mu.Lock()
			if p.trigger != nil && bytes.Contains(buf[:n], p.trigger) {
				stalled = true
				p.stalled++
			}
			p.mu.Unlock()
			if !stalled {
				if _, err := server.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// arm makes the proxy stall a connection at the simple query sql, the way
// pgx sends a statement without arguments; "" disarms it.
func (p *stallProxy) arm(sql string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger = nil
	if sql != "" {
		n := 4 + len(sql) + 1
		p.trigger = append([]byte{'Q', byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, sql+"\x00"...)
	}
}

func (p *stallProxy) stalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// A take of several buckets is a transaction. A connection that stalls when
// the transaction ends, at COMMIT or at ROLLBACK, holds the take no longer
// than its context: the store ends nothing on a context of its own.
func TestTransactionEndThatStallsReturnsAtTheDeadline(t *testing.T) {
	u, err := url.Parse(testservers.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// The table is made, and dropped, without the proxy; the proxy is closed
	// first, so that a take it stalled ends before the pool closes and the
	// table is dropped.
	table := newStore(t, pool(t, 2)).Table()
	proxy := startProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	p, err := pgxpool.New(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	t.Cleanup(proxy.close)
	s := pgstore.New(p, pgstore.WithTable(table))

	const deadline = 300 * time.Millisecond
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		t.Run(end, func(t *testing.T) {
			a := store.Demand{Scope: storetest.Scope(t), Rate: 1, Burst: 5, Cost: 1}
			b := store.Demand{Scope: storetest.Scope(t), Rate: 1, Burst: 5, Cost: 1}
			if end == "ROLLBACK" {
				// b is spent: a take of both is denied, and rolled back.
				spent := b
				spent.Cost = 5
				if dec, err := s.Take(context.Background(), time.Now(), []store.Demand{spent}); err != nil || !dec.OK {
					t.Fatalf("spending b: %+v, %v", dec, err)
				}
			}
			proxy.arm(end)
			defer proxy.arm("")
			before := proxy.stalls()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := s.Take(ctx, time.Now(), []store.Demand{a, b})
				done <- err
			}()
			select {
			case err := <-done:
				took := time.Since(start)
				if proxy.stalls() == before {
					t.Fatalf("the proxy never saw %s: the test tested nothing (Take returned %v)", end, err)
				}
				if took > deadline+500*time.Millisecond {
					t.Errorf("with %s stalled, Take returned after %v; its deadline was %v", end, took, deadline)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("with %s stalled, Take returned %v; want its context's error", end, err)
				}
			case <-time.After(deadline + 3*time.Second):
				t.Fatalf("with %s stalled, Take was still blocked %v after its %v deadline", end, 3*time.Second, deadline)
			}
			// The stalled connection is gone, not back in the pool.
			proxy.arm("")
			if dec, err := s.Take(context.Background(), time.Now(), []store.Demand{{Scope: storetest.Scope(t), Rate: 1, Burst: 1, Cost: 1}}); err != nil || !dec.OK {
				t.Fatalf("after the stall, Take = %+v, %v", dec, err)
			}
		})
	}
}
