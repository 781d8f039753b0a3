// Package alertfleet checks that two OS processes sharing a Redis store
// send one throttle alert per interval between them, not one each. The test
// binary is its own helper: run with PACER_ALERT_CHILD set, it is one
// instance of the fleet.
package alertfleet

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
)

const (
	processes = 2
	interval  = 500 * time.Millisecond
	floodFor  = 2500 * time.Millisecond
	every     = 10 * time.Millisecond // each process's calls, all throttled but the fleet's first
)

// The child's configuration, from its environment.
const (
	envChild  = "PACER_ALERT_CHILD" // the Redis address
	envPrefix = "PACER_ALERT_PREFIX"
	envStart  = "PACER_ALERT_START" // Unix nanoseconds
)

// report is what a child prints: the calls it saw throttled, and its alerts.
type report struct {
	Throttled int64
	Alerts    []sent
}

type sent struct {
	At    time.Time
	Count int64
}

func TestMain(m *testing.M) {
	if addr := os.Getenv(envChild); addr != "" {
		r, err := child(addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "alert fleet child:", err)
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(r)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child floods its Transport with calls that the shared bucket throttles,
// then waits for its last alert.
func child(addr string) (report, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ns, err := strconv.ParseInt(os.Getenv(envStart), 10, 64)
	if err != nil {
		return report{}, err
	}
	var mu sync.Mutex
	var r report
	var throttled atomic.Int64
	tr := pacer.New(okAPI{},
		pacer.WithStore(redisstore.New(rdb, redisstore.WithPrefix(os.Getenv(envPrefix))), store.Policy{OnFailure: store.FailClosed}),
		pacer.WithLimit(pacer.Limit{Count: 1, Per: 24 * time.Hour, Burst: 1}), pacer.WithFailFast(),
		pacer.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.EventThrottled {
				throttled.Add(1)
			}
		})),
		pacer.WithAlerts(interval, func(a observe.Alert) {
			mu.Lock()
			r.Alerts = append(r.Alerts, sent{time.Now(), a.Count})
			mu.Unlock()
		}))
	if err := tr.Err(); err != nil {
		return report{}, err
	}
	start := time.Unix(0, ns)
	time.Sleep(time.Until(start))
	for time.Since(start) < floodFor {
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		time.Sleep(every)
	}
	// The counts of an instance that lost the last race go when it next
	// wins, within an interval.
	time.Sleep(2*interval + 200*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	r.Throttled = throttled.Load()
	return r, nil
}

type okAPI struct{}

func (okAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req, Header: http.Header{}}, nil
}

func TestOneAlertPerIntervalForTheFleet(t *testing.T) {
	addr := testservers.RedisAddr(t)
	var b [4]byte
	rand.Read(b[:])
	prefix := "alerts-" + hex.EncodeToString(b[:])
	start := time.Now().Add(300 * time.Millisecond) // after both processes are up

	reports := make([]report, processes)
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for i := range processes {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+addr, envPrefix+"="+prefix,
			envStart+"="+strconv.FormatInt(start.UnixNano(), 10))
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				if ee, ok := err.(*exec.ExitError); ok {
					err = fmt.Errorf("%v: %s", err, ee.Stderr)
				}
				errs[i] = err
				return
			}
			errs[i] = json.Unmarshal(out, &reports[i])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	var all []sent
	var throttled, counted int64
	for i, r := range reports {
		t.Logf("process %d: %d throttled, %d alerts", i, r.Throttled, len(r.Alerts))
		throttled += r.Throttled
		for _, a := range r.Alerts {
			counted += a.Count
			all = append(all, a)
		}
	}
	slices.SortFunc(all, func(a, b sent) int { return a.At.Compare(b.At) })
	if throttled == 0 {
		t.Fatal("nothing was throttled")
	}
	if counted != throttled {
		t.Errorf("the fleet's alerts count %d throttled calls; %d were", counted, throttled)
	}
	// Each window is opened in Redis's time and the alert timed in its
	// process after the round trip, and after whatever the scheduler adds
	// under load: allow half an interval. Two processes alerting each on
	// its own would send their alerts in pairs, a few milliseconds apart.
	const slack = interval / 2
	for i := 1; i < len(all); i++ {
		if gap := all[i].At.Sub(all[i-1].At); gap < interval-slack {
			t.Errorf("alerts %d and %d came %v apart; the interval is %v", i-1, i, gap, interval)
		}
	}
	// One at the start, one per interval of the flood, and the last counts:
	// alone, each process would send as many.
	if most := int(floodFor/interval) + 2; len(all) > most {
		t.Errorf("the fleet sent %d alerts in a %v flood, want at most %d", len(all), floodFor, most)
	}
}
