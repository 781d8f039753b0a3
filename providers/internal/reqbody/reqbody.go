// Package reqbody reads fields from a request's body for provider routes,
// without consuming the body the request will be sent with.
package reqbody

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// MaxPeek is how much of a body a route reads to find a field. The fields
// routes look for (a sender, a channel, a recipient) come early in the small
// bodies these APIs take; a larger body is read only this far.
const MaxPeek = 64 << 10

// Read returns at most limit bytes of req's body, read from a fresh copy
// through req.GetBody, so that the body to be sent is left untouched. ok is
// false when the request has no body or no GetBody (a body that cannot be
// replayed is never read by a route), or when reading fails. A caller that
// must tell a body longer than n reads n+1.
func Read(req *http.Request, limit int64) (b []byte, ok bool) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil || body == nil {
		return nil, false
	}
	defer body.Close()
	b, err = io.ReadAll(io.LimitReader(body, limit))
	return b, err == nil
}

// Peek returns the first MaxPeek bytes of req's body (see Read), or nil.
func Peek(req *http.Request) []byte {
	b, ok := Read(req, MaxPeek)
	if !ok {
		return nil
	}
	return b
}

// Field returns the value of a top-level field of req's body: a form field
// when the body is application/x-www-form-urlencoded, a top-level JSON string
// when it is JSON (or when no content type says otherwise and the body looks
// like a JSON object). It returns "" when the field is absent, not a string,
// or the body cannot be read.
func Field(req *http.Request, name string) string {
	b := Peek(req)
	if len(b) == 0 {
		return ""
	}
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch {
	case mediaType == "application/x-www-form-urlencoded":
		values, err := url.ParseQuery(string(b))
		if err != nil {
			return ""
		}
		return values.Get(name)
	case mediaType == "application/json" || mediaType == "" && b[0] == '{':
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) != nil {
			return ""
		}
		var s string
		if json.Unmarshal(fields[name], &s) != nil {
			return ""
		}
		return s
	}
	return ""
}
