package twilio

import "github.com/pacer-go/pacer/providers/figures"

const (
	charLimitPage = "https://www.twilio.com/docs/glossary/what-sms-character-limit"
	queuePage     = "https://www.twilio.com/docs/api/errors/21611"
	queueArticle  = "https://support.twilio.com/hc/en-us/articles/115002943027-Understanding-Twilio-Rate-Limits-and-Message-Queues"
	tollFreePage  = "https://support.twilio.com/hc/en-us/articles/4411046744987-Toll-Free-SMS-and-MMS-messaging-throughput-MPS"
	twilioReadOn  = "2026-12-01"
)

// Figures returns every figure the preset uses, with its source.
func Figures() []figures.Figure {
	return []figures.Figure{
		{Preset: "twilio", Name: "body length", Value: MaxBodyChars, Unit: "characters",
			Source: "https://www.twilio.com/docs/api/errors/21617", Read: twilioReadOn,
			Quote: "The Body parameter for an outgoing message can be up to 1,600 characters."},
		{Preset: "twilio", Name: "GSM-7 characters in one segment", Value: gsmSingleSegment, Unit: "characters",
			Source: charLimitPage, Read: twilioReadOn, Quote: "GSM-7 | 1 | 160 | 153 | 1,600"},
		{Preset: "twilio", Name: "GSM-7 characters per segment of a longer message", Value: gsmMultiSegment, Unit: "characters",
			Source: charLimitPage, Read: twilioReadOn, Quote: "GSM-7 | 1 | 160 | 153 | 1,600"},
		{Preset: "twilio", Name: "UCS-2 characters in one segment", Value: ucs2SingleSegment, Unit: "characters",
			Source: "https://www.twilio.com/docs/glossary/what-is-ucs-2-character-encoding", Read: twilioReadOn,
			Quote: "a message which is encoded in UCS-2 has a maximum of 70 characters"},
		{Preset: "twilio", Name: "UCS-2 characters per segment of a longer message", Value: ucs2MultiSegment, Unit: "characters",
			Read: twilioReadOn, Source: charLimitPage,
			Unverified: "the stored copies of Twilio's character-limit table were cut before the UCS-2 row, and the sentence of Twilio's UCS-2 glossary that gives it (\"leaving 153 GSM-7 characters or 67 UCS-2 characters\") was read only on its mirror at https://sendgrid.com/docs/glossary/what-is-ucs-2-character-encoding; 67 is the GSM 03.40 figure (140 octets less a 6-octet header, in 2-octet units) and can only make the segment estimate higher, which is the safe side"},
		{Preset: "twilio", Name: "long code segments", Scope: ScopeLongCode, Value: longCodeMPS, Unit: "segments/s",
			Source: queuePage, Read: twilioReadOn,
			Quote: "a US long code number can send one message segment per second"},
		{Preset: "twilio", Name: "short code segments", Scope: ScopeShortCode, Value: shortCodeMPS, Unit: "segments/s",
			Source: queuePage, Read: twilioReadOn,
			Quote: "a short code may send over 100 message segments per second",
			Note:  "\"over 100\": the preset takes the floor; a short code with purchased throughput needs its own WithScope"},
		{Preset: "twilio", Name: "toll-free segments", Scope: ScopeTollFree, Value: tollFreeMPS, Unit: "segments/s",
			Source: tollFreePage, Read: twilioReadOn,
			Quote: "By default, any US Toll-Free number you purchase from Twilio offers an SMS sending throughput of 3 MPS (message segments per second) toward the US and Canada.",
			Note:  "Twilio's support article; High-Throughput Toll-Free \"starts at 25 MPS\" on request: override the scope for such a number"},
		{Preset: "twilio", Name: "international sender segments", Scope: ScopeInternational, Value: internationalMPS, Unit: "segments/s",
			Source: tollFreePage, Read: twilioReadOn,
			Quote: "Toll-Free US numbers will receive the standard throughput of 10 MPS, just like all other Twilio numbers sending outside of the +1 region.",
			Note:  "the article states it of numbers sending outside the +1 region; the preset applies it to every sender that is not a +1 number or a short code, alphanumeric sender IDs included, which the article does not name"},
		{Preset: "twilio", Name: "sender queue", Value: senderQueueHours, Unit: "hours of segments",
			Source: queueArticle, Read: twilioReadOn,
			Quote: "each of your Twilio phone numbers has a separate queue, and each queue can hold up to 10 hours' worth of message segments based on the sending rate for a phone number type",
			Note:  "older copies of https://www.twilio.com/docs/api/errors/21611 say 4 hours; its current copy and the support article say 10. Twilio queues what exceeds a sender's rate and refuses (error 21611) only past the queue, so the preset keeps at most SenderBurst segments queued"},
		{Preset: "twilio pool", Name: "a queue, and a rate, per number", Scope: PoolSenderScope("<name>"), Value: longCodeMPS, Unit: "segments/s (long code)",
			Source: queueArticle, Read: "2026-12-02",
			Quote: "each of your Twilio phone numbers has a separate queue, and each queue can hold up to 10 hours' worth of message segments based on the sending rate for a phone number type",
			Note:  "SenderPool gives each sender a scope of its own at its type's rate (the figures above), in segments: the pool's route charges each message its segments on " + ScopePoolSegments + ", which paces nothing, and the sender chosen is charged as many"},
		{Preset: "twilio", Name: "concurrency error code", Value: codeTooManyRequests, Unit: "error code",
			Source: "https://www.twilio.com/docs/api/errors/20429", Read: twilioReadOn,
			Quote: "Twilio returns this error when your account exceeds allowed concurrency to Twilio's REST API (HTTP 429 Too Many Requests). Requests that receive 429 responses aren't processed and are safe to retry after backing off."},
		{Preset: "twilio", Name: "concurrent REST requests", Scope: ScopeAccount, Value: accountConcurrency, Unit: "requests",
			Read: twilioReadOn, Source: "https://www.twilio.com/docs/api/errors/20429",
			Quote:      "Twilio returns this error when your account exceeds allowed concurrency to Twilio's REST API",
			Unverified: "Twilio's error page says there is a concurrency limit, and its support article on the 429 that \"the maximum number of concurrent API requests has been reached\", but neither gives the number; 100 is what third-party guides report. A 20429 lowers the cap, as a 429 lowers a rate, and the emulator test gives the preset and the emulator the same cap rather than lean on this one"},
	}
}
