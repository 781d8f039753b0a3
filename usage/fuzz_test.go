package usage

import (
	"os"
	"testing"
)

// FuzzReader feeds any bytes, cut anywhere, to every reader: it must never
// panic, and where the body is cut must not change what it reads.
func FuzzReader(f *testing.F) {
	for _, b := range bodies {
		data, err := os.ReadFile("testdata/" + b.file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(7))
	}
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":5}}\r\n\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, body []byte, step uint16) {
		step = max(step%512, 1)
		for _, sel := range []Selector{OpenAI, Anthropic} {
			for _, ct := range []string{"application/json", "text/event-stream"} {
				whole, cut := selectAny(sel, ct), selectAny(sel, ct)
				whole.Observe(body)
				for p := body; len(p) > 0; p = p[min(len(p), int(step)):] {
					cut.Observe(p[:min(len(p), int(step))])
				}
				u1, f1 := whole.End()
				u2, f2 := cut.End()
				if u1 != u2 || f1 != f2 {
					t.Fatalf("%s: whole %+v %v, in chunks of %d %+v %v", ct, u1, f1, step, u2, f2)
				}
				if u1.Input < 0 || u1.CacheRead < 0 || u1.CacheWrite < 0 || u1.CacheWrite1h < 0 || u1.Output < 0 {
					t.Fatalf("%s: negative usage %+v", ct, u1)
				}
				s1, ok1 := whole.(Counter).Streamed()
				s2, ok2 := cut.(Counter).Streamed()
				if s1 != s2 || ok1 != ok2 {
					t.Fatalf("%s: whole streamed %+v %v, in chunks of %d %+v %v", ct, s1, ok1, step, s2, ok2)
				}
				if s1.Input < 0 || s1.CacheRead < 0 || s1.CacheWrite < 0 || s1.CacheWrite1h < 0 || s1.Output < 0 {
					t.Fatalf("%s: negative count %+v", ct, s1)
				}
			}
		}
	})
}

// selectAny returns sel's reader for an endpoint it reads.
func selectAny(sel Selector, contentType string) Reader {
	if r := sel(request("/v1/chat/completions"), response(contentType)); r != nil {
		return r
	}
	return sel(request("/v1/messages"), response(contentType))
}
