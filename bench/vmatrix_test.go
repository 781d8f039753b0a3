package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
)

// A vRatchet is what a cell of the virtual matrix must still do: goodput
// from the start at least floor, refusals per call accepted at most
// refused, the neighbour's refusals per call of its answered at most
// neighbour; target is issue 25's goodput for the cell (0: none set).
type vRatchet struct {
	floor, refused, neighbour, target float64
}

// vRatchets are pacer's figures since counts are read as of when they
// were made (issue 25), the lowest goodput and the most refusals of three
// runs, beside those at b211167 (the controller before, of 13 runs): the
// floor 0.02 below the lowest (goroutines woken at one instant run in
// varying order, and a few cells move between runs), a refusal bound the most seen + 0.002 (× 1.2 + 0.002 above one
// a call) or the 1 %, whichever is more, so that a cell within the
// target never fails on refusals. Where pacer takes the neighbour's share
// (goodput above 1) the floor is 0.5: giving the share back is no
// regression. Raise the floors as the controller improves; the comment
// beside each gives the target (every cell also: ≤ 1 % refused,
// the neighbour's too) and today's goodput · refused per accepted (·
// the neighbour's refused per call).
//
// Four floors went down with the fixed window's turn (session 10), each
// for a reason: beside a neighbour, over the round trip and on a busy
// host, pacer gave up goodput it took from the neighbour (0.922 with 1.1 %
// refused and the neighbour's 2.2 % → 0.869 with none and 0.4 %; 0.971
// with 1.0 % → 0.938 with 0.3 %); the token bucket's told 2× on loopback
// (0.982 → 0.957, its first seconds: from 2 s both 1.005) and over the
// round trip with the limit known (0.946 → 0.933) lost to waking a
// waiting call each time a report raised the pace, which the fixed
// window over the round trip needs (told 2×: 0.894 without it, 0.931).
//
// Session 11 raised the nine fixed-window floors: its turns dated on the
// window's period by the earliest seen, counts from before a turn bounding
// nothing, the next window spread over what is left of its sending and
// capped at its count, a neighbour's takes since a count taken off it
// (over the round trip, limit known 0.849 → 0.934; beside a neighbour
// 0.869 → 0.958). One went down: the sliding window beside a neighbour
// over the round trip, 0.961 → 0.940 (refusals 1.14 % → 1.07 %), since
// whether the scope is alone is read within the route's disorder, of late
// and over a second; its cause within that change is not isolated. Then
// one refill after half a window of counts dated the turns, and the latest
// two refills, not the earliest ever, their phase: the second window is
// spent too (loopback known 0.963 → 0.973, busy 0.963 → 0.969), and three
// floors went down: beside a neighbour on loopback (0.973 → 0.968) and on
// a busy host (0.986 · 0.42 % → 0.964 · 0.09 %) pacer gives back what it
// took of the neighbour's share, and over the round trip told 2× (0.956 →
// 0.951) and beside the neighbour (0.958 → 0.935, refusals 0.18 % →
// 0.09 %) the turns dated by the latest two wander by the route's jitter
// more than by the earliest of four, which dated them early by the gaps
// of a window that starts at the first call (2.4 % refused beside the
// neighbour).
var vRatchets = map[string]vRatchet{
	"sliding window, loopback, limit known":                       {0.966, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.978 · 0; now 0.978 · 0.0000; the limit itself at the edge (session 16) 0.986 · 0.0000
	"sliding window, loopback, told 2×":                           {0.95, 0.01, 0.01, 0.95},     // target ≥ 0.95 (publishes its state); b211167 0.963 · 0; now 0.970 · 0.0000
	"sliding window, loopback, neighbour at 40%":                  {0.941, 0.01, 0.01, 0.9},     // target ≥ 0.90 (publishes its state); b211167 0.961 · 0 · 0; now 0.961 · 0.0000
	"sliding window, rtt 200–400 ms, limit known":                 {0.915, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state, over the round trip); b211167 0.717 · 0; now 0.935 · 0.0000; the first burst's disorder no neighbour (session 21) 0.943 · 0.0016 (0.934 → 0.942 over eight draws); with a refusal widening the margin (session 23) 0.940 · 0.0005 (0.944 → 0.941 over eight draws)
	"sliding window, rtt 200–400 ms, told 2×":                     {0.916, 0.01, 0.01, 0.93},    // target ≥ 0.93 (publishes its state, over the round trip); b211167 0.736 · 0; 0.936 · 0.0070; a sliding window's first turn giving back what the window before counted (session 23) 0.949 · 0.0048 (eight draws 0.942 · 0.65 % → 0.952 · 0.56 %)
	"sliding window, rtt 200–400 ms, neighbour at 40%":            {0.918, 0.01, 0.01, 0.88},    // target ≥ 0.88 (publishes its state, over the round trip); b211167 0.751 · 0 · 0; until the fixed-window turn (session 10) 0.965 · 0.0061 · 0.0216; session 10 0.961 · 0.0114 · 0.0127; 0.940 · 0.0107 · 0.0190; the margin holding every client's disorder (session 23) 0.928 · 0.0073 · 0.0025 (eight draws 0.950 · 1.16 % · 1.16 % → 0.938 · 0.64 % · 0.44 %), the refusal bounds down to the 1 %; a refusal of a paced call widening the margin 0.922 · 0.0046 · 0.0013 (eight draws 0.929 · 0.41 % · 0.38 %)
	"sliding window, busy, limit known":                           {0.966, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.964 · 0; now 0.976 · 0.0000; the limit itself at the edge (session 16) 0.986 · 0.0000
	"sliding window, busy, told 2×":                               {0.952, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state); b211167 0.950–0.951 · 0; now 0.972 · 0.0000
	"sliding window, busy, neighbour at 40%":                      {0.94, 0.01, 0.01, 0.9},      // target ≥ 0.90 (publishes its state); b211167 0.945 · 0 · 0; until the fixed-window turn (session 10) 0.960 · 0.0000; now 0.963 · 0.0000 · 0.0000
	"fixed window, loopback, limit known":                         {0.953, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.959 · 0; session 10 0.959 · 0.0000; with the turns on the window (session 11) 0.963 · 0.0000; now, one refill enough and the latest two dating the turns, 0.973 · 0.0000
	"fixed window, loopback, told 2×":                             {0.947, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state); b211167 0.947 · 0; session 10 0.951 · 0.0000; with the turns on the window (session 11) 0.961 · 0.0000; now, one refill enough and the latest two dating the turns, 0.967 · 0.0000
	"fixed window, loopback, neighbour at 40%":                    {0.948, 0.01, 0.0358, 0.9},   // target ≥ 0.90 (publishes its state); b211167 0.976 · 0.0043 · 0.0375; until the fixed-window turn (session 10) 0.962 · 0.0043 · 0.0338; session 10 0.955 · 0.0009 · 0.0025; with the turns on the window (session 11) 0.973 · 0.0000 · 0.0000; now, one refill enough and the latest two dating the turns, 0.968 · 0.0000 · 0.0000
	"fixed window, rtt 200–400 ms, limit known":                   {0.928, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state, over the round trip); b211167 0.781 · 0; 410790c 0.784 · 0; until the fixed-window turn (session 10) 0.790 · 0.0000; 0.830 · 0.0000 with it; session 10 the calls in flight at the turn spending the next window, 0.849 · 0.0000; with the turns on the window (session 11) 0.934 · 0.0011; now, one refill enough and the latest two dating the turns, 0.937 · 0.0000; the limit itself at the edge (session 16) 0.948 · 0.0005; the first burst's disorder no neighbour (session 21) 0.951 · 0.0000 (0.939 → 0.945 over eight draws)
	"fixed window, rtt 200–400 ms, told 2×":                       {0.931, 0.01, 0.01, 0.93},    // target ≥ 0.93 (publishes its state, over the round trip); b211167 0.703–0.753 · 0; 410790c 0.846 · 0.0006; until the fixed-window turn (session 10) 0.929 · 0.0027; session 10 0.931 · 0.0081; with the turns on the window (session 11) 0.956 · 0.0016; now, one refill enough and the latest two dating the turns, 0.951 · 0.0021
	"fixed window, rtt 200–400 ms, neighbour at 40%":              {0.915, 0.013, 0.0236, 0.88}, // target ≥ 0.88 (publishes its state, over the round trip); b211167 0.916 · 0.0083 · 0.0114; until the fixed-window turn (session 10) 0.922 · 0.0110 · 0.0216; session 10 0.869 · 0.0000 · 0.0038; with the turns on the window (session 11) 0.958 · 0.0018 · 0.0064; now, one refill enough and the latest two dating the turns, 0.935 · 0.0009 · 0.0089
	"fixed window, busy, limit known":                             {0.949, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.923–0.947 · 0; 410790c 0.895 · 0; until the fixed-window turn (session 10) 0.933 · 0.0000; session 10 0.951 · 0.0000; with the turns on the window (session 11) 0.963 · 0.0000; now, one refill enough and the latest two dating the turns, 0.969 · 0.0000
	"fixed window, busy, told 2×":                                 {0.944, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state); b211167 0.870–0.926 · 0; 410790c 0.947 · 0; 17bea11 0.918; until the fixed-window turn (session 10) 0.937 · 0.0000; session 10 0.946 · 0.0000; with the turns on the window (session 11) 0.959 · 0.0000; now, one refill enough and the latest two dating the turns, 0.964 · 0.0000
	"fixed window, busy, neighbour at 40%":                        {0.944, 0.0123, 0.0458, 0.9}, // target ≥ 0.90 (publishes its state); b211167 0.949 · 0.0088 · 0.0413; until the fixed-window turn (session 10) 0.971 · 0.0103 · 0.0438; session 10 0.938 · 0.0027 · 0.0038; with the turns on the window (session 11) 0.986 · 0.0042 · 0.0088; now, one refill enough and the latest two dating the turns, 0.964 · 0.0009 · 0.0000
	"token bucket (GCRA), loopback, limit known":                  {0.972, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.110 · 0; 410790c 0.932; until the fixed-window turn (session 10) 0.951 · 0.0000; session 10 0.953 · 0.0000 (0.980 from 2 s); now, a full count young setting no pace, 0.973 · 0.0000; the limit itself at the edge (session 16) 0.992 · 0.0000
	"token bucket (GCRA), loopback, told 2×":                      {0.95, 0.01, 0.01, 0.95},     // target ≥ 0.95 (publishes its state); b211167 0.105 · 0.0236; until the fixed-window turn (session 10) 0.982 · 0.0051; now 0.957 · 0.0031; the blind start's refusals no edge (session 22) 0.995 · 0.0030 (0.946 → 0.992 over eight draws)
	"token bucket (GCRA), loopback, neighbour at 40%":             {0.969, 0.01, 0.01, 0.9},     // target ≥ 0.90 (publishes its state); b211167 0.188 · 0 · 0; 410790c 0.955; until the fixed-window turn (session 10) 0.977 · 0.0000; session 10 0.980 · 0.0000 · 0.0000; now, a full count young setting no pace, 0.989 · 0.0000 · 0.0000
	"token bucket (GCRA), rtt 200–400 ms, limit known":            {0.941, 0.01, 0.01, 0.95},    // target ≥ 0.95 (publishes its state, over the round trip); b211167 0.139 · 0; until the fixed-window turn (session 10) 0.946 · 0.0000; session 10 0.933 · 0.0000; now, a full count young setting no pace, 0.929 · 0.0000; session 15, what the count gave back over seconds held, 0.953 · 0.0000 (0.948 averaged over eight seeds); the limit itself at the edge (session 16) 0.961 · 0.0000 (0.962 over eight draws)
	"token bucket (GCRA), rtt 200–400 ms, told 2×":                {0.952, 0.0219, 0.01, 0.93},  // target ≥ 0.93 (publishes its state, over the round trip); b211167 0.100 · 0.1106; until the fixed-window turn (session 10) 0.972 · 0.0134; now 0.970 · 0.0166; half the bucket as margin once refused after the first seconds (session 22) 0.966 · 0.0135
	"token bucket (GCRA), rtt 200–400 ms, neighbour at 40%":       {0.955, 0.01, 0.01, 0.88},    // target ≥ 0.88 (publishes its state, over the round trip); b211167 0.188 · 0.0044 · 0; until the fixed-window turn (session 10) 0.982 · 0.0093 · 0.0140; now 0.988 · 0.0109 · 0.0114; half the bucket as margin once refused after the first seconds (session 22) 0.975 · 0.0034 · 0.0013, the refusal bounds down to the 1 %; with the blind start's refusals no edge 0.989 · 0.0034 · 0.0051
	"token bucket (GCRA), busy, limit known":                      {0.967, 0.01, 0.01, 0.97},    // target ≥ 0.97 (publishes its state); b211167 0.106 · 0; 410790c 0.926; until the fixed-window turn (session 10) 0.941 · 0.0000; session 10 0.955 · 0.0000 (0.980 from 2 s); now, a full count young setting no pace, 0.967 · 0.0000; the limit itself at the edge (session 16) 0.987 · 0.0000
	"token bucket (GCRA), busy, told 2×":                          {0.96, 0.01, 0.01, 0.95},     // target ≥ 0.95 (publishes its state); b211167 0.101 · 0.0245; until the fixed-window turn (session 10) 0.992 · 0.0025; now 0.995 · 0.0025, but 0.962 once in 33 runs with -race beside three busy loops (session 20: the order calls are admitted at one instant), and 0.970 over eight draws: floored at the target; that order was the first burst's refusals read as the edge, which the blind start's are not (session 22): 0.999 · 0.0025, 0.996 over eight draws
	"token bucket (GCRA), busy, neighbour at 40%":                 {0.981, 0.01, 0.01, 0.9},     // target ≥ 0.90 (publishes its state); b211167 0.189 · 0 · 0; 410790c 0.979 · 0.0017; until the fixed-window turn (session 10) 0.989 · 0; session 10 0.993 · 0.0058 · 0.0025; a full count young setting no pace, 1.001 · 0.0017 · 0.0075, the neighbour's refusals over 0–2.5 % of its calls on sixteen draws (bounded at 2 % then); now, a whole call as margin below the configured quota (session 20), 0.996 · 0 · 0, and 0 on each of eight draws
	"leaky bucket, loopback, limit known":                         {0.876, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.896 · 0; now 0.896 · 0.0000
	"leaky bucket, loopback, told 2×":                             {0.973, 0.01, 0.01, 0.95},    // target ≥ 0.95 (nginx, bare 429s); b211167 0.993 · 0.0015; now 0.993 · 0.0015
	"leaky bucket, loopback, neighbour at 40%":                    {0.969, 0.01, 0.0138, 0},     // (no goodput target beside a neighbour); 0.989 · 0.005 · 0.0088; a window's only refusal cut with the wider headroom (session 22) 0.993 · 0.0033 · 0.0063
	"leaky bucket, rtt 200–400 ms, limit known":                   {0.87, 0.01, 0.01, 0.89},     // target ≥ 0.89 (nginx); b211167 0.890 · 0; now 0.890 · 0.0000
	"leaky bucket, rtt 200–400 ms, told 2×":                       {0.943, 0.0207, 0.01, 0.95},  // target ≥ 0.95 (nginx, bare 429s); b211167 0.963 · 0.0187; 0.963 · 0.0187; a window's only refusal cut with the wider headroom (session 22) 0.978 · 0.0169; a halving for want of history flattening at what the calls after it measure (session 25) 0.981 · 0.0143 (eight draws 1.53 → 1.45 %)
	"leaky bucket, rtt 200–400 ms, neighbour at 40%":              {0.947, 0.0131, 0.0126, 0},   // (no goodput target beside a neighbour); 0.967 · 0.0111 · 0.0076; a window's only refusal cut with the wider headroom (session 22) 0.956 · 0.0087 · 0.0063; the calls in flight checking that cut (session 23): this draw unchanged (its first refusal had too little history, and halved), eight draws 0.975 · 1.32 % · 1.06 % → 0.974 · 1.00 % · 0.65 %; the halving flattening at the share the calls in flight found (session 25): this draw unchanged, eight draws 0.964 · 0.96 % · 0.62 %; and a halving for want of history at what the calls after it measure: this draw 0.970 · 0.0085 · 0.0063, eight draws 0.956 · 0.89 % · 0.60 %
	"leaky bucket, busy, limit known":                             {0.876, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.896 · 0; now 0.896 · 0.0000
	"leaky bucket, busy, told 2×":                                 {0.966, 0.01, 0.01, 0.95},    // target ≥ 0.95 (nginx, bare 429s); b211167 0.986 · 0.002; now 0.986 · 0.0020
	"leaky bucket, busy, neighbour at 40%":                        {0.957, 0.01, 0.01, 0},       // (no goodput target beside a neighbour); 0.977 · 0.005 · 0.0025; a window's only refusal cut with the wider headroom (session 22) 0.986 · 0.0033 · 0.0025
	"leaky bucket, Retry-After, loopback, limit known":            {0.876, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.896 · 0; now 0.896 · 0.0000
	"leaky bucket, Retry-After, loopback, told 2×":                {0.924, 0.01, 0.01, 0.93},    // target ≥ 0.93 (nginx, Retry-After: 1); b211167 0.944 · 0.0016; now 0.944 · 0.0016
	"leaky bucket, Retry-After, loopback, neighbour at 40%":       {0.887, 0.01, 0.01, 0},       // (no goodput target beside a neighbour); today 0.907 · 0.0018 · 0
	"leaky bucket, Retry-After, rtt 200–400 ms, limit known":      {0.871, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.891 · 0; now 0.891 · 0.0000
	"leaky bucket, Retry-After, rtt 200–400 ms, told 2×":          {0.907, 0.016, 0.01, 0.93},   // target ≥ 0.93 (nginx, Retry-After: 1); b211167 0.927 · 0.014; now 0.927 · 0.0140
	"leaky bucket, Retry-After, rtt 200–400 ms, neighbour at 40%": {0.90, 0.0219, 0.0152, 0},    // (no goodput target beside a neighbour); 0.625 · 0.0199 · 0.0102 until a measure left out the scope's own pause (session 9); 0.911 · 0.0163 · 0.0102; the calls in flight checking a cut on the window's only refusal (session 23) 0.974 · 0.0136 · 0.0114 (eight draws 0.908 · 1.14 % · 0.76 % → 0.928 · 0.99 % · 0.81 %); the halving flattening at the share the calls in flight found (session 25) 0.959 · 0.0095 · 0.0063 (eight draws 0.931 · 0.82 % · 0.54 %)
	"leaky bucket, Retry-After, busy, limit known":                {0.875, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.895 · 0; now 0.895 · 0.0000
	"leaky bucket, Retry-After, busy, told 2×":                    {0.922, 0.01, 0.01, 0.93},    // target ≥ 0.93 (nginx, Retry-After: 1); b211167 0.942 · 0.0021; now 0.942 · 0.0021
	"leaky bucket, Retry-After, busy, neighbour at 40%":           {0.886, 0.01, 0.01, 0},       // (no goodput target beside a neighbour); today 0.906 · 0.0018 · 0
	"concurrency cap, loopback, limit known":                      {0.968, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.988 · 0; now 0.988 · 0.0000
	"concurrency cap, loopback, told 2×":                          {0.968, 0.0227, 0.01, 0.95},  // target ≥ 0.95 (nginx); b211167 0.988 · 19.7437; 410790c 0.988 · 18.4367; now 0.988 · 0.0127, the 4 refused of the first burst (from 2 s: 0)
	"concurrency cap, loopback, neighbour at 40%":                 {0.5, 0.01, 1.005, 0},        // (no goodput target beside a neighbour); today 1.646 · 0 · 1, takes the neighbour's share
	"concurrency cap, busy, limit known":                          {0.918, 0.01, 0.01, 0.89},    // target ≥ 0.89 (nginx); b211167 0.938 · 0; now 0.938 · 0.0000
	"concurrency cap, busy, told 2×":                              {0.914, 0.0334, 0.01, 0.95},  // target ≥ 0.95 (nginx); b211167 0.975 · 11.7083; 410790c 0.975 · 11.4808; now 0.934 · 0.0234: the busy host's bound, limit known gets 0.938 (a slot spans the late read)
	"concurrency cap, busy, neighbour at 40%":                     {0.5, 0.0218, 0.145, 0},      // (no goodput target beside a neighbour); 410790c 1.438 · 1.4348 · 0.7874; now 0.885 · 0.0118 · 0.135
}

// refusalBound is the refusals a cell may show, its ratchet's figure
// given: a quarter more and half a percent of the calls. On an idle host
// a cell's run repeats to the call; on a loaded one (CI, with other
// packages' tests at once) the goroutines woken at one virtual instant
// run in another order, and a neighbour's refused share moved from 0.034
// to 0.041 — noise, not the regression the ratchet is for.
func refusalBound(seen float64) float64 { return seen*1.25 + 0.005 }

// loadSlack is how far below its floor a loaded host may take a cell's
// goodput, for the same reason.
const loadSlack = 0.01

// TestVirtualMatrix is issue 25's judge in virtual time: every cell of
// VCells for 20 virtual seconds (with -short, limit known and told 2× on
// loopback and over the round trip), held to vRatchets. With -v it prints
// the table, each cell marked against the target.
func TestVirtualMatrix(t *testing.T) {
	cells := VCells(testing.Short(), 20*time.Second)
	began := time.Now()
	rs := VirtualMatrix(t, cells)
	took := time.Since(began)
	if t.Failed() {
		return
	}
	var b bytes.Buffer
	WriteVirtualMatrix(&b, rs, func(r VResult) string { return vMark(r, vRatchets[r.Cell.Name()]) })
	if testing.Verbose() {
		fmt.Printf("\nThe virtual matrix, pacer, %d cells of %v, in %v:\n\n%s\n", len(cells), cells[0].Duration, took.Round(time.Millisecond), b.String())
	}
	seen := map[string]bool{}
	for _, r := range rs {
		name := r.Cell.Name()
		seen[name] = true
		want, ok := vRatchets[name]
		if !ok {
			t.Errorf("%s: no entry in vRatchets", name)
			continue
		}
		s := r.Score()
		if g, floor := s.Goodput(), want.floor-loadSlack; g < floor {
			t.Errorf("%s: goodput %.3f, below its floor %.3f", name, g, floor)
		}
		if f, bound := s.RefusedPerAccepted(), refusalBound(want.refused); f > bound {
			t.Errorf("%s: %d refused for %d accepted (%.4f a call), above its bound %.4f", name, s.Refused, s.Accepted, f, bound)
		}
		if r.NeighbourRate > 0 {
			if f, bound := r.NeighbourRefused(), refusalBound(want.neighbour); f > bound {
				t.Errorf("%s: the neighbour refused %.4f of its calls, above its bound %.4f", name, f, bound)
			}
		}
	}
	if !testing.Short() {
		for name := range vRatchets {
			if !seen[name] {
				t.Errorf("vRatchets has %q, which is no cell", name)
			}
		}
	}
}

// vMark says where r stands against issue 25's target.
func vMark(r VResult, want vRatchet) string {
	s := r.Score()
	var miss []string
	if want.target > 0 && s.Goodput() < want.target {
		miss = append(miss, fmt.Sprintf("goodput < %.2f", want.target))
	}
	if s.RefusedPerAccepted() > 0.01 {
		miss = append(miss, "refused > 1 %")
	}
	if r.NeighbourRate > 0 && r.NeighbourRefused() > 0.01 {
		miss = append(miss, "neighbour refused > 1 %")
	}
	if len(miss) == 0 {
		return "meets the target"
	}
	return "**below target**: " + strings.Join(miss, ", ")
}

// get sends a GET for path through rt and returns its status and headers.
func get(t *testing.T, rt http.RoundTripper, path string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test"+path, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestVirtualServersLimit checks that each family's server limits in
// virtual time, as its library or nginx does: of 150 calls at one instant
// it lets through its quota (httprate's and ulule's 100), its bucket
// (throttled's 11, nginx's 1 + 20) or its cap (4); then, each alone for 5
// virtual seconds, it takes a call every 10 ms (100/s) without a refusal
// (the windows all but a few) and of a call every 5 ms (200/s) about half. Its headers are the
// library's: throttled's X-RateLimit-Limit is 11.
func TestVirtualServersLimit(t *testing.T) {
	want := map[string]struct {
		burst          int
		limit          string
		tooMany, retry bool
	}{
		"sliding window":            {100, "100", true, true},
		"fixed window":              {100, "100", true, false},
		"token bucket (GCRA)":       {11, "11", true, true},
		"leaky bucket":              {21, "", true, false},
		"leaky bucket, Retry-After": {21, "", true, true},
		"concurrency cap":           {4, "", false, false},
	}
	for _, f := range VFamilies {
		w, ok := want[f.Name]
		if !ok {
			t.Fatalf("%s: no expectation", f.Name)
		}
		t.Run(f.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(vStart))
				h, err := f.server()
				if err != nil {
					t.Fatal(err)
				}
				srv := inProcess{h}
				var mu sync.Mutex
				codes := map[int]int{}
				var refused http.Header
				var wg sync.WaitGroup
				for range 150 {
					wg.Go(func() {
						code, hdr := get(t, srv, f.Path)
						mu.Lock()
						defer mu.Unlock()
						codes[code]++
						if code != http.StatusOK && refused == nil {
							refused = hdr
						}
					})
				}
				wg.Wait()
				over := http.StatusTooManyRequests
				if !w.tooMany {
					over = http.StatusServiceUnavailable
				}
				if codes[http.StatusOK] != w.burst || codes[over] != 150-w.burst {
					t.Errorf("150 calls at once: %v, want %d × 200 and %d × %d", codes, w.burst, 150-w.burst, over)
				}
				if got := refused.Get("X-RateLimit-Limit"); got != w.limit {
					t.Errorf("X-RateLimit-Limit %q, want %q", got, w.limit)
				}
				if got := refused.Get("Retry-After") != ""; got != w.retry {
					t.Errorf("a refusal carries Retry-After: %v, want %v (%v)", got, w.retry, refused)
				}
				if refused.Get("Date") == "" {
					t.Errorf("no Date header: %v", refused)
				}
				if f.Path == PathConn {
					return // a call lasts connService: a pace of calls one at a time never fills it
				}
				for _, every := range []time.Duration{10 * time.Millisecond, 5 * time.Millisecond} {
					time.Sleep(3 * time.Second) // a full bucket, a fresh window
					ok := 0
					for range int(5 * time.Second / every) {
						if code, _ := get(t, srv, f.Path); code == http.StatusOK {
							ok++
						}
						time.Sleep(every)
					}
					lo, hi := 500, 500
					if every == 5*time.Millisecond {
						lo, hi = 450, 600 // 100/s over 5 s, and what a quota or a bucket let through at once
					}
					if (f.Kind() == Sliding || f.Kind() == Fixed) && every == 10*time.Millisecond {
						// At exactly the rate a window refuses now and then:
						// httprate's weighted count rounds up, ulule's window
						// still holds a call that arrives as it expires.
						lo = 490
					}
					if ok < lo || ok > hi {
						t.Errorf("a call every %v for 5 s: %d accepted, want %d–%d", every, ok, lo, hi)
					}
				}
			})
		})
	}
}

// Kind is f's library kind, or -1 for nginx's models.
func (f Family) Kind() Kind {
	if f.Go == nil {
		return -1
	}
	return f.Go.Kind
}

// TestVNetworks checks the virtual networks: each call's round trip within
// the network's bounds; calls sent together reach the server in another
// order than they were sent in; over the round trip and on the busy host,
// answers come back in another order than the server gave them; and the
// same seed gives the same round trips, run after run.
func TestVNetworks(t *testing.T) {
	for _, n := range VNetworks {
		t.Run(n.Name, func(t *testing.T) {
			lo, hi := time.Millisecond, 1100*time.Microsecond
			switch n.Name {
			case VRoundTrip.Name:
				lo, hi = 200*time.Millisecond, 400*time.Millisecond
			case VBusy.Name:
				hi += 30 * time.Millisecond
			}
			run := func() (trips []time.Duration, sent, arrived, back string) {
				synctest.Test(t, func(t *testing.T) {
					s := &stamp{}
					wire := n.wire(7, s)
					var mu sync.Mutex
					var wg sync.WaitGroup
					for i := range 40 {
						sent += string(rune('A' + i))
						wg.Go(func() {
							t0 := time.Now()
							get(t, wire, "/"+string(rune('A'+i)))
							mu.Lock()
							defer mu.Unlock()
							trips = append(trips, time.Since(t0))
							back += string(rune('A' + i))
						})
						time.Sleep(time.Nanosecond) // sent in order, at distinct instants
					}
					wg.Wait()
					for _, p := range s.order {
						arrived += p[1:]
					}
				})
				slices.Sort(trips)
				return
			}
			trips, sent, arrived, back := run()
			if trips[0] < lo || trips[len(trips)-1] > hi+time.Microsecond {
				t.Errorf("round trips %v–%v, want within %v–%v", trips[0], trips[len(trips)-1], lo, hi)
			}
			if arrived == sent {
				t.Errorf("40 calls reached the server in the order they were sent")
			}
			if n.Name != VLoopback.Name && back == arrived {
				t.Errorf("40 calls came back in the order the server answered them")
			}
			again, _, _, _ := run()
			if !slices.Equal(trips, again) {
				t.Errorf("the same seed drew other round trips: %v, then %v", trips, again)
			}
		})
	}
}

// TestVirtualGCRAPace runs the token bucket's cell "limit known" on
// loopback and logs what pacer says its pace is and why: every
// EventPaceChanged and the scope's Stats at the end, beside the calls the
// server accepted each second. It checks that they explain the pace: the
// last event's Rate is the Stats' Rate — or, where live remaining counts
// pace the scope (they move it at every answer, and an event marks only
// what sets the pace), the last event says so as Stats does — and Stats
// says why.
func TestVirtualGCRAPace(t *testing.T) {
	i := slices.IndexFunc(VCells(false, 20*time.Second), func(c VCell) bool {
		return c.Family.Kind() == GCRA && c.Net.Name == VLoopback.Name && c.Situation.Scale == 1 && c.Situation.NeighbourShare == 0
	})
	c := VCells(false, 20*time.Second)[i]
	var mu sync.Mutex
	var events []observe.Event
	var at []time.Duration
	c.Options = []pacer.Option{pacer.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.EventPaceChanged {
			mu.Lock()
			events, at = append(events, e), append(at, time.Since(vStart))
			mu.Unlock()
		}
	}))}
	var stats pacer.ScopeStats
	c.AtEnd = func(tr *pacer.Transport) { stats = tr.Stats().Scopes[0] }
	r := VirtualMatrix(t, []VCell{c})[0]
	for i, e := range events {
		t.Logf("%7.3fs EventPaceChanged scope %q rate %.2f/s why %q", at[i].Seconds(), e.Scope, e.Rate, e.Why)
	}
	t.Logf("Stats at %v: rate %.2f/s burst %.2f learned %v why %q admitted %d rejected %d", c.Duration, stats.Rate, stats.Burst, stats.Learned, stats.Why, stats.Admitted, stats.Rejected)
	t.Logf("accepted each second %v, 429s %d: goodput %.3f", r.PerSecond, r.Rejected(), r.Score().Goodput())
	if len(events) == 0 {
		t.Fatal("no EventPaceChanged")
	}
	last := events[len(events)-1]
	if strings.Contains(stats.Why, "remains") {
		if !strings.Contains(last.Why, "remains") {
			t.Errorf("Stats says the counts pace the scope (%q); the last EventPaceChanged says %q", stats.Why, last.Why)
		}
	} else if last.Rate < 0.99*stats.Rate || last.Rate > 1.01*stats.Rate {
		t.Errorf("the last EventPaceChanged says %.2f/s, Stats %.2f/s", last.Rate, stats.Rate)
	}
	if stats.Why == "" {
		t.Error("Stats says nothing of why")
	}
}

// Told twice nginx's rate, with its 429s' Retry-After: 1, over the route:
// a refusal of a call sent after a measured cut, within its window, is the
// server's bucket the pace before the cut filled, drained for seconds by a
// pace below its rate; it pauses only its call (pace.Cuts.Refused). It
// paused the scope for a second, four to eight seconds in, on two of these
// four draws (0.897 and 0.900 of the ceiling; 0.946 and 0.932 without the
// pause).
func TestABriefRetryAfterWithinAMeasuredCutsWindow(t *testing.T) {
	var cell VCell
	for _, c := range VCells(false, 20*time.Second) {
		if c.Name() == "leaky bucket, Retry-After, rtt 200–400 ms, told 2×" {
			cell = c
		}
	}
	if cell.Family.Name == "" {
		t.Fatal("no such cell")
	}
	for draw := range 4 {
		cell.Draw = draw
		r := VirtualMatrix(t, []VCell{cell})[0]
		if g := r.Score().Goodput(); g < 0.92 {
			t.Errorf("draw %d: %.3f of the ceiling, want ≥ 0.92: a brief Retry-After paused the scope again (per second %v)", draw, g, r.PerSecond)
		}
	}
}
