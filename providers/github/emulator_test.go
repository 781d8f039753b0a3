package github_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/github"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/github"
	"github.com/pacer-go/pacer/providers/internal/providertest"
)

// workload is an integration that searches code and issues while it reads
// issues and comments on them: two workers search code, three search
// issues, three comment, the rest read.
func workload(w, n int) *http.Request {
	const host = "https://api.github.com"
	var req *http.Request
	switch {
	case w < 2:
		req, _ = http.NewRequest("GET", host+"/search/code?q=pacer+in:file", nil)
	case w < 5:
		req, _ = http.NewRequest("GET", host+"/search/issues?q=is:open+label:bug", nil)
	case w < 8:
		req, _ = http.NewRequest("POST", host+fmt.Sprintf("/repos/o/r/issues/%d/comments", n), strings.NewReader(`{"body":"seen"}`))
	default:
		req, _ = http.NewRequest("GET", host+fmt.Sprintf("/repos/o/r/issues/%d", n), nil)
	}
	return req
}

// The preset, driven for an hour by searches, reads and comments against an
// emulator of GitHub's documented limits, is refused nothing and uses at
// least 85% of each limit that binds: code search (9 a minute), search (30
// a minute), content creation (500 an hour) and the core limit.
func TestPresetAgainstTheEmulator(t *testing.T) {
	for _, auth := range []github.Auth{github.Token, github.Installation} {
		t.Run(fmt.Sprint(auth), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				providertest.Today()
				server := emu.New(emu.CorePerHour)
				server.Latency = 200 * time.Millisecond
				client := pacer.New(emulator.Transport(server), github.Preset(auth)).Client()
				const run = time.Hour
				statuses := providertest.Drive(client, 24, run, workload)
				t.Logf("statuses %v", statuses)
				if refused := server.Tally.Refused(); len(refused) > 0 {
					t.Errorf("refused: %v (statuses %v)", refused, statuses)
				}
				mins := run.Minutes()
				for _, c := range []struct {
					what string
					got  int
					want float64
				}{
					{"code searches", server.Tally.Accepted("code_search"), emu.CodeSearchPerMinute * mins},
					{"searches", server.Tally.Accepted("search"), emu.SearchPerMinute * mins},
					{"comments", server.Tally.Accepted("content"), emu.ContentPerHour * run.Hours()},
					{"core calls", server.Tally.Accepted("core"), emu.CorePerHour * run.Hours()},
				} {
					t.Logf("%s: %d of %.0f", c.what, c.got, c.want)
					if float64(c.got) < 0.85*c.want {
						t.Errorf("%d %s in %v, want at least 85%% of %.0f", c.got, c.what, run, c.want)
					}
				}
			})
		})
	}
}

func TestFiguresHaveSources(t *testing.T) {
	if err := figures.Check(github.Figures()); err != nil {
		t.Fatal(err)
	}
}

// The preset's figures are the emulator's documented ones: a figure above
// GitHub's can hide behind pacer's headroom and GitHub's headers in a run,
// so each is checked on its own.
func TestFiguresMatchTheEmulator(t *testing.T) {
	want := map[string]float64{
		"github token/core requests":                             emu.CorePerHour,
		"github installation/core requests (start, provisional)": emu.CorePerHour,
		"github installation/core requests (most)":               emu.InstallationMax,
		"github/search requests":                                 emu.SearchPerMinute,
		"github/code search requests":                            emu.CodeSearchPerMinute,
		"github/concurrent requests":                             emu.Concurrent,
		"github/REST points":                                     emu.RESTPointsPerMinute,
		"github/content-creating requests per minute":            emu.ContentPerMinute,
		"github/content-creating requests per hour":              emu.ContentPerHour,
	}
	if err := figures.Compare(github.Figures(), want); err != nil {
		t.Error(err)
	}
}
