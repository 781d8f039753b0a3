package pacer

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestStatsDescribeTheScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}}}}
		tr := New(api, WithLimit(PerSecond(100)), WithConcurrency(4), WithoutRetry(),
			WithScope(Scope{Name: "key", Limit: PerSecond(10)}),
			WithScope(Scope{Name: "account", Limit: PerSecond(10)}),
			WithWorkload("interactive", Workload{Reserve: 0.25}))
		get(tr, context.Background(), "http://api.test/") // a 429: cut and paused
		req, _ := http.NewRequestWithContext(ContextWithWorkload(context.Background(), "interactive"), http.MethodGet, "http://api.test/", nil)
		go func() { // waits out the pause
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}()
		synctest.Wait()
		st := tr.Stats()
		if len(st.Scopes) != 3 || st.Scopes[1].Name != DefaultScope {
			t.Fatalf("scopes = %+v, want account, default, key", st.Scopes)
		}
		d := st.Scopes[1]
		if d.Cooldown != 30*time.Second || d.Factor != cutFactor || d.Rate != 90*cutFactor || d.Waiting != 1 || d.Admitted != 1 {
			t.Errorf("default scope = %+v", d)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if d := tr.Stats().Scopes[1]; d.InFlight != 0 || d.Waiting != 0 || d.Cooldown != 0 || d.Admitted != 2 {
			t.Errorf("after the pause: %+v", d)
		}
	})
}
