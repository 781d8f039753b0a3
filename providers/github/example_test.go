package github_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/github"
)

func Example() {
	// One Transport per token; pass t.Client() to go-github's NewClient.
	t := pacer.New(nil, github.Preset(github.Token))
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
