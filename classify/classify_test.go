package classify

import (
	"net/http"
	"testing"
)

func TestBackPressure(t *testing.T) {
	statuses := []int{529}
	f := BackPressure(statuses...)
	statuses[0] = 500 // the caller's slice changing later changes nothing
	for status, want := range map[int]bool{529: true, 500: false, 429: false} {
		if got := f(&http.Response{StatusCode: status}, nil); got.BackPressure != want {
			t.Errorf("status %d: BackPressure %v, want %v", status, got.BackPressure, want)
		}
	}
}
