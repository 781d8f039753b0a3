package whatsapp

import "github.com/pacer-go/pacer/providers/figures"

const (
	throughputPage = "https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput"
	errorCodesPage = "https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes"
	whatsappReadOn = "2026-12-01"
	poolReadOn     = "2026-12-02"
	limitsPage     = "https://developers.facebook.com/documentation/business-messaging/whatsapp/messaging-limits"

	// What the search of Meta's error-codes page gave: its introduction,
	// never its table's rows.
	errorRowsNotFound = "Meta's error-codes page was found, but no search surfaced its table's rows (queried by the code, its title, \"Throttling errors\", \"spam rate limit\", \"pair rate limit\", \"Rate limit issues\"); only third-party copies state the code's meaning, and they are not Meta's word (for 80007 they disagree on the limit behind it)"
)

// Figures returns every figure the preset uses, and the error codes it reads
// or leaves alone, with its source.
func Figures() []figures.Figure {
	f := func(preset, name, scope string, v float64, unit, src, quote string) figures.Figure {
		return figures.Figure{Preset: preset, Name: name, Scope: scope, Value: v, Unit: unit,
			Source: src, Read: whatsappReadOn, Quote: quote}
	}
	unverified := func(name, scope string, v float64, unit, src, why, note string) figures.Figure {
		return figures.Figure{Preset: "whatsapp", Name: name, Scope: scope, Value: v, Unit: unit,
			Source: src, Read: whatsappReadOn, Unverified: why, Note: note}
	}
	pair := unverified("pair interval", ScopePair, pairInterval.Seconds(), "s per message to one user", throughputPage,
		"Meta's throughput page gives no number, only that a pair rate limit exists; the page with the number (Cloud API overview, \"Pair rate limits\") was not surfaced. "+
			"Third-party pages agree on one message every 6 seconds; the preset keeps it, and a pair rate error slows that pair further",
		"third-party pages also speak of bursts borrowed from later sends; pacer does not rely on them")
	pair.Quote = "If you attempt to send too many messages to the same WhatsApp user number, you may encounter a pair rate limit error"
	inbound := "\"Throughput is inclusive of inbound and outbound messages and all message types.\" pacer sees only what it sends: reserve the number's inbound rate with ReserveInbound"
	out := []figures.Figure{
		f("whatsapp standard", "messages per number", ScopeThroughput, standardMPS, "messages/s", throughputPage,
			"For each registered business phone number, Cloud API supports up to 80 messages per second (mps) by default, and up to 1,000 mps by automatic upgrade."),
		f("whatsapp high", "messages per number", ScopeThroughput, highMPS, "messages/s", throughputPage,
			"If you meet our eligibility requirements, we will automatically upgrade your business phone number to 1,000 mps at no cost to you."),
		f("whatsapp coexistence", "messages per number", ScopeThroughput, coexistenceMPS, "messages/s", throughputPage,
			"WhatsApp Business app phone numbers that are in use with both the WhatsApp Business app and Cloud API have a fixed throughput of 20 mps."),
		f("whatsapp", "throughput error code", "", codeThroughput, "error code", throughputPage,
			"If you attempt to send more messages than your current throughput level allows, the API will return error code 130429 until you are within your allowed level again."),
		pair,
		unverified("pair rate error code", "", codePairRate, "error code", errorCodesPage,
			errorRowsNotFound+"; they agree on \"(#131056) (Business Account, Consumer Account) pair rate limit hit\". Classified as back-pressure on the pair only, as the preset did before",
			""),
		unverified("marketing limit error code (left unclassified)", "", 131049, "error code", errorCodesPage,
			errorRowsNotFound+". Not classified: a 131049 is treated as any other error, final, not retried", ""),
		unverified("spam rate limit error code (left unclassified)", "", 131048, "error code", errorCodesPage,
			errorRowsNotFound+". Not classified: a 131048 is treated as any other error, final, not retried", ""),
		unverified("account rate limit error code (left unclassified)", "", 80007, "error code", errorCodesPage,
			errorRowsNotFound+". Not classified: an 80007 is treated as any other error, final, not retried", ""),
	}
	out = append(out,
		figures.Figure{Preset: "whatsapp pool", Name: "throughput is per number", Scope: NumberScope("<name>"), Value: standardMPS, Unit: "messages/s",
			Source: throughputPage, Read: poolReadOn,
			Quote: "For each registered business phone number, Cloud API supports up to 80 messages per second (mps) by default, and up to 1,000 mps by automatic upgrade.",
			Note:  "PhoneNumbers gives each number its own scope at its own level (80, 1,000 or 20)"},
		figures.Figure{Preset: "whatsapp pool", Name: "WhatsApp Business Account rate limit (not paced)", Unit: "messages/s",
			Source: throughputPage, Read: poolReadOn,
			Quote:      "Note that business phone numbers, regardless of throughput, are still subject to their WhatsApp Business Account rate limit and template messaging limits.",
			Unverified: "the page names the account's rate limit but gives no figure, and no stored page of Meta's does; the pool declares no shared scope for it, so it is not paced, for one number or many"},
		figures.Figure{Preset: "whatsapp pool", Name: "messaging limit, shared by the portfolio's numbers (not paced)", Value: 250, Unit: "unique users/24h",
			Source: limitsPage, Read: poolReadOn,
			Quote: "Messaging limits are calculated and set at the business portfolio level and are shared by all business phone numbers within a portfolio.",
			Note:  "\"Newly created business portfolios have a messaging limit of 250\", raised to 2,000, 10,000, 100,000 or unlimited. It counts unique users reached outside a customer service window, which pacer cannot tell apart, so no scope paces it: pooling numbers does not raise it"},
	)
	for i := range out {
		if out[i].Scope == ScopeThroughput {
			out[i].Note = inbound
		}
	}
	return out
}
