package twilio

import "github.com/pacer-go/pacer/providers/figures"

const (
	charLimitPage = "https://www.twilio.com/docs/glossary/what-sms-character-limit"
	queuePage     = "https://www.twilio.com/docs/api/errors/21611"
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
			Unverified: "the stored copy of Twilio's character-limit table was cut before the UCS-2 row; 67 is the GSM 03.40 figure (140 octets less a 6-octet header, in 2-octet units) and can only make the segment estimate higher, which is the safe side"},
		{Preset: "twilio", Name: "long code segments", Scope: ScopeLongCode, Value: longCodeMPS, Unit: "segments/s",
			Source: queuePage, Read: twilioReadOn,
			Quote: "a US long code number can send one message segment per second"},
		{Preset: "twilio", Name: "short code segments", Scope: ScopeShortCode, Value: shortCodeMPS, Unit: "segments/s",
			Source: queuePage, Read: twilioReadOn,
			Quote: "a short code may send over 100 message segments per second"},
		{Preset: "twilio", Name: "toll-free segments", Scope: ScopeTollFree, Value: tollFreeMPS, Unit: "segments/s",
			Read: twilioReadOn, Source: "https://help.twilio.com/articles/115002943027",
			Unverified: "the help article \"Understanding Twilio Rate Limits and Message Queues\" was not in the stored copies; Twilio queues what exceeds a sender's rate rather than refusing it, so a wrong figure adds queueing delay, not failures"},
		{Preset: "twilio", Name: "international sender segments", Scope: ScopeInternational, Value: internationalMPS, Unit: "segments/s",
			Read: twilioReadOn, Source: "https://help.twilio.com/articles/115002943027",
			Unverified: "as for toll-free numbers: the help article was not in the stored copies; Twilio queues, it does not refuse"},
		{Preset: "twilio", Name: "concurrent REST requests", Scope: ScopeAccount, Value: accountConcurrency, Unit: "requests",
			Read: twilioReadOn, Source: "https://www.twilio.com/docs/api/errors/20429",
			Unverified: "Twilio says error 20429 means the account \"exceeds allowed concurrency\" but publishes no number; 100 is what third-party guides report. A 20429 lowers the cap, as a 429 lowers a rate"},
	}
}
