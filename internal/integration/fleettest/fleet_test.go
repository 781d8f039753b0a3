// Package fleettest checks that a fleet of OS processes, each configured at
// the provider's full limit, stays under that limit together when they share
// a Redis or Postgres store. The test binary is its own helper: run with
// PACER_FLEET_CHILD set, it is one instance of the fleet.
package fleettest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/pgstore"
	"github.com/pacer-go/pacer/store/redisstore"
)

const (
	processes = 4
	limit     = 100 // requests a second, the provider's published limit
	senders   = 8   // goroutines per process, each sending as fast as allowed
	runFor    = 10 * time.Second
)

// The child's configuration, from its environment.
const (
	envChild  = "PACER_FLEET_CHILD"  // "redis", "redis-cluster" or "postgres"
	envServer = "PACER_FLEET_SERVER" // a cluster's nodes are comma-separated
	envName   = "PACER_FLEET_NAME"   // Redis key prefix, or Postgres table
	envTarget = "PACER_FLEET_TARGET"
	envUntil  = "PACER_FLEET_UNTIL" // Unix nanoseconds
)

func TestMain(m *testing.M) {
	if kind := os.Getenv(envChild); kind != "" {
		run := child
		switch {
		case os.Getenv(envRunaway) != "":
			run = runawayChild // runaway_test.go
		case os.Getenv(envPool) != "":
			run = poolChild // pool_test.go
		}
		n, err := run(kind)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet child:", err)
			os.Exit(1)
		}
		fmt.Println(n)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is one instance: pacer at the full limit on the shared store,
// sending until the deadline. It returns how many requests it sent.
func child(kind string) (int64, error) {
	ctx := context.Background()
	shared, until, closeStore, err := childStore(ctx, kind, senders)
	if err != nil {
		return 0, err
	}
	defer closeStore()
	tr := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(limit)), pacer.WithStore(shared, store.Policy{OnFailure: store.FailClosed, Timeout: storeTimeout})) // a store error must show, not be paced around
	if err := tr.Err(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var sent atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", os.Getenv(envTarget), nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					// Near the end, a wait that would outlast the deadline
					// fails at once: that is pacing, not an error.
					if ctx.Err() == nil && !errors.Is(err, pacer.ErrThrottled) {
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				resp.Body.Close()
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return sent.Load(), nil
}

// storeTimeout bounds a child's store calls (store.Policy.Timeout), not the
// default second: the fleets of four processes run side by side, racing,
// on a two-core machine, and Postgres missed the second for one take in a
// few CI runs, which a child failing closed reported as an outage. These
// tests are of the fleet sharing its limits and budgets, not of the
// store's latency under that load; an outage still shows at once, as a
// refused connection.
const storeTimeout = 10 * time.Second

// childStore returns a child's connection to the shared store, with a pool
// of about conns connections, the deadline it runs until, and what closes
// the connection.
func childStore(ctx context.Context, kind string, conns int) (store.Store, time.Time, func(), error) {
	ns, err := strconv.ParseInt(os.Getenv(envUntil), 10, 64)
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	until := time.Unix(0, ns)
	switch kind {
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envServer), PoolSize: conns})
		return redisstore.New(rdb, redisstore.WithPrefix(os.Getenv(envName))), until, func() { rdb.Close() }, nil
	case "redis-cluster":
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv(envServer), ","), PoolSize: conns})
		return redisstore.New(cc, redisstore.WithPrefix(os.Getenv(envName))), until, func() { cc.Close() }, nil
	case "postgres":
		pool, err := pgxpool.New(ctx, os.Getenv(envServer))
		if err != nil {
			return nil, time.Time{}, nil, err
		}
		return pgstore.New(pool, pgstore.WithTable(os.Getenv(envName))), until, pool.Close, nil
	}
	return nil, time.Time{}, nil, fmt.Errorf("unknown store %q", kind)
}

func TestFleetRedis(t *testing.T) {
	t.Parallel()
	addr := testservers.RedisAddr(t)
	runFleet(t, "redis", addr, "fleet-"+randomName())
}

func TestFleetRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := testservers.RedisClusterAddrs(t)
	runFleet(t, "redis-cluster", strings.Join(addrs, ","), "fleet-"+randomName())
}

func TestFleetPostgres(t *testing.T) {
	t.Parallel()
	url, table := postgresTable(t, "fleet_")
	runFleet(t, "postgres", url, table)
}

// postgresTable returns the test Postgres server's URL and a new table of
// the store's, dropped when the test ends.
func postgresTable(t *testing.T, prefix string) (url, table string) {
	url = testservers.PostgresURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	table = prefix + randomName()
	if err := pgstore.New(pool, pgstore.WithTable(table)).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), url)
		if err == nil {
			pool.Exec(context.Background(), "DROP TABLE "+table)
			pool.Close()
		}
	})
	return url, table
}

// spawn runs the fleet's processes to the end, with env added to their
// environment, and hands each one's output to read.
func spawn(t *testing.T, kind, server, name, target string, until time.Time, env []string, read func(out string) error) {
	var wg sync.WaitGroup
	errs := make(chan error, processes)
	for range processes {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+kind, envServer+"="+server, envName+"="+name,
			envTarget+"="+target, envUntil+"="+strconv.FormatInt(until.UnixNano(), 10))
		cmd.Env = append(cmd.Env, env...)
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					err = fmt.Errorf("%v: %s", err, ee.Stderr)
				}
				errs <- err
				return
			}
			if err := read(string(out)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func randomName() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runFleet runs the processes against one counting server and checks every
// one-second window of what it received.
func runFleet(t *testing.T, kind, server, name string) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
	}))
	defer srv.Close()

	until := time.Now().Add(runFor)
	var total int64
	spawn(t, kind, server, name, srv.URL, until, nil, func(out string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return fmt.Errorf("child said %q: %v", out, err)
		}
		atomic.AddInt64(&total, n)
		return nil
	})

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	// A request cut off by the deadline after it left is seen but not counted.
	if n := int64(len(arrivals)); n < total || n > total+processes*senders {
		t.Errorf("the processes sent %d, the server saw %d", total, n)
	}
	// The largest count in any window of one second, starting at an arrival.
	most, j := 0, 0
	for i := range arrivals {
		for j < len(arrivals) && arrivals[j].Sub(arrivals[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	const headroom = 0.9 // WithHeadroom's default, which the processes keep
	burst := int(limit * (1 - headroom))
	t.Logf("%d processes at the full limit of %d/s on %s for %v: sent %d (%.1f/s); the busiest second saw %d",
		processes, limit, kind, runFor, len(arrivals), float64(len(arrivals))/runFor.Seconds(), most)
	if most > limit+burst {
		t.Errorf("a one-second window saw %d requests; the limit is %d, plus a burst of %d", most, limit, burst)
	}
	// They did send: at the pace, not at a quarter of it.
	if pace := limit * headroom * runFor.Seconds(); float64(len(arrivals)) < 0.8*pace {
		t.Errorf("the fleet sent %d, well under its pace of %.0f", len(arrivals), pace)
	}
}
