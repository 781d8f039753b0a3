package pacer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// A fleet of four sharing a MemoryStore sees a SetLimit within the
// interval (store/redisstore runs the same check on Redis).
func TestLimitSyncMemoryStore(t *testing.T) {
	storetest.LimitSync(t, store.NewMemory())
}

// A cut one instance takes on a refusal reaches the others at their next
// sync, once (store/redisstore and store/pgstore run the same checks).
func TestCutSyncMemoryStore(t *testing.T) {
	storetest.CutSync(t, store.NewMemory())
}

func TestPaceRecordsMemoryStore(t *testing.T) {
	storetest.PaceRecords(t, store.NewMemory())
}

func TestLimitSyncNeedsALimitStore(t *testing.T) {
	err := pacer.New(nil, pacer.WithStore(storeOnly{store.NewMemory()}, store.Policy{LimitSync: time.Second})).Err()
	if err == nil || !strings.Contains(err.Error(), "LimitStore") {
		t.Errorf("err = %v, want one naming LimitStore", err)
	}
}

// storeOnly hides every method but the Store's.
type storeOnly struct{ store.Store }
