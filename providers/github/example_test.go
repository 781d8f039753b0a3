package github_test

import (
	"fmt"
	"log/slog"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/github"
)

func Example() {
	// One Transport per token; pass t.Client() to go-github's NewClient.
	// Preset takes GitHub's own settings only, as every provider's does;
	// pacer's options go to pacer.New beside it, and one given after the
	// preset wins: here a logger of the Transport's decisions.
	t := pacer.New(nil, github.Preset(github.Token),
		pacer.WithLogger(slog.New(slog.DiscardHandler)))
	if err := t.Err(); err != nil {
		panic(err)
	}
	_ = t.Client()

	fmt.Println(github.PrimaryLimit(github.Token), github.PrimaryLimit(github.EnterpriseCloudApp))
	fmt.Println(github.IsMutation(`mutation { addStar(input: {starrableId: "x"}) { clientMutationId } }`))
	// Output:
	// 5000/1h0m0s 15000/1h0m0s
	// true
}
