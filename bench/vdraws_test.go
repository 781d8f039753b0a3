package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// One draw of delays and jitter moves a cell of the virtual matrix by a
// hundredth or so, and a rule can hold on the cell's own draw while it
// fails on others: the first form of session 15's floor held the GCRA over
// the round trip at 0.947 on its own draw, and at 0.81–0.84 on three draws
// in eight. With PACER_VDRAWS=n, TestVirtualMatrixDraws runs every cell on
// n draws (its own and n−1 others) and prints, for each, the mean goodput,
// the mean refusals per accepted call (and the neighbour's, mean and
// most) and on how many draws it meets
// issue 25's target (about 10 s for eight draws):
//
//	PACER_VDRAWS=8 go test -run TestVirtualMatrixDraws -v ./bench
//
// It judges a change to the controller; the ratchets stay on each cell's
// own draw (TestVirtualMatrix).
func TestVirtualMatrixDraws(t *testing.T) {
	n := drawsFromEnv(t, "PACER_VDRAWS", "the number of draws a cell is run on")
	cells := VCells(false, 20*time.Second)
	type tally struct {
		goodput, refused, neighbour float64
		worst                       float64 // the neighbour's most refused on a draw
		meets                       int
	}
	tallies := make([]tally, len(cells))
	for draw := range n {
		for i := range cells {
			cells[i].Draw = draw
		}
		for i, r := range VirtualMatrix(t, cells) {
			s := r.Score()
			tallies[i].goodput += s.Goodput() / float64(n)
			tallies[i].refused += s.RefusedPerAccepted() / float64(n)
			if r.NeighbourRate > 0 {
				tallies[i].neighbour += r.NeighbourRefused() / float64(n)
				tallies[i].worst = max(tallies[i].worst, r.NeighbourRefused())
			}
			if vMark(r, vRatchets[r.Cell.Name()]) == "meets the target" {
				tallies[i].meets++
			}
		}
	}
	if t.Failed() || !testing.Verbose() {
		return
	}
	total := 0
	fmt.Printf("\nThe virtual matrix on %d draws: mean goodput · refused per accepted (· the neighbour's refused per call, mean and most), draws at target\n\n| cell | mean | at target |\n|---|---:|---:|\n", n)
	for i, c := range cells {
		tl := tallies[i]
		total += tl.meets
		nb := ""
		if c.Situation.NeighbourShare > 0 {
			nb = fmt.Sprintf(" · %.4f, most %.4f", tl.neighbour, tl.worst)
		}
		fmt.Printf("| %s | %.3f · %.4f%s | %d of %d |\n", c.Name(), tl.goodput, tl.refused, nb, tl.meets, n)
	}
	fmt.Printf("\nAt target: %d of %d cell-draws.\n", total, n*len(cells))
}

// drawsFromEnv returns the number of draws the environment variable env
// sets, or skips t: what names what the number counts.
func drawsFromEnv(t *testing.T, env, what string) int {
	n, err := strconv.Atoi(os.Getenv(env))
	if err != nil || n < 1 {
		t.Skipf("set %s to %s", env, what)
	}
	return n
}
