package slack_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/slack"
)

func Example() {
	tiers := slack.MethodTiers()
	tiers["admin.users.list"] = slack.Tier2 // a method the table lacks
	// Preset takes Slack's own settings only (the tiers), as every
	// provider's does; pacer's options go to pacer.New beside it, and one
	// given after the preset wins: here no retries, for a caller that
	// retries itself.
	t := pacer.New(nil, slack.Preset(tiers), pacer.WithoutRetry())
	if err := t.Err(); err != nil {
		panic(err)
	}
	_ = t.Client() // e.g. slack.New(token, slack.OptionHTTPClient(t.Client())) with slack-go

	fmt.Println(slack.Tier2.Scope(), slack.Tier2.Limit())
	// Output: slack/tier2 20/1m0s
}
