package usage

// This file is the streaming reader: an SSE line splitter feeding a JSON
// scanner, both byte-at-a-time state machines, so that a body can be cut
// anywhere and the reader's memory stays fixed whatever the body holds.
//
// The scanner does not build values. It keeps, for each open container, the
// node of the schema's path tree it stands at (-1 once off every path), the
// current object key in a small buffer, and the integer being read; a number
// that ends under a leaf of the tree is recorded in that leaf's slot. Strings
// — the text of a completion, a tool's arguments, an embedding is numbers but
// off every path — are skipped byte by byte and never held.

// The fixed bounds of a reader. A key longer than maxKey matches no path (the
// longest path key, "cache_creation_input_tokens", has 27 bytes); a document
// nested deeper than maxDepth is abandoned: its usage, if any, is not read.
const (
	maxKey   = 32
	maxDepth = 64
	// maxField is the longest SSE field name kept: "data" is all we read.
	maxField = 5
	// maxTokens bounds a recorded count. A larger one is not a token count
	// any provider bills, and adding several could overflow an int64.
	maxTokens = 1 << 50
)

// JSON scanner states.
const (
	jValue        uint8 = iota // a value is expected
	jArrayFirst                // after '[': a value or ']'
	jObjectFirst               // after '{': a key or '}'
	jKey                       // after ',' in an object: a key
	jKeyString                 // inside a key
	jKeyEscape                 // after '\' inside a key
	jColon                     // after a key
	jString                    // inside a string value
	jStringEscape              // after '\' inside a string value
	jNumber                    // inside a number
	jLiteral                   // inside true, false or null
	jAfter                     // after a value: ',' or a closing bracket
	jDone                      // after the top-level value: only whitespace
	jBad                       // the document is malformed or too deep
)

// scanner is the JSON state machine for one document.
type scanner struct {
	tree  *tree
	state uint8
	depth uint8  // open containers
	array uint64 // bit i set: container i is an array
	// node[i] is the tree node of container i; -1 when off every path.
	// Containers past len(node) are always off every path.
	node [8]int16
	// member is the node of the value now being read: the child, under the
	// current key, of the enclosing object's node.
	member int16
	key    [maxKey]byte
	keyLen uint8 // maxKey+1: too long to match
	num    uint64
	numBad bool // signed, fractional, exponent or too large
	// counting: the string being read is output (a counted leaf's), whose
	// bytes strLen counts.
	counting bool
	strLen   int64
	// out counts the output that streamed past, across documents.
	out streamCount
}

// streamCount is the output a stream showed: the bytes of its deltas'
// text, and how many deltas had any. It counts text as it passes, whether
// or not its document turns out whole: the caller has those bytes.
type streamCount struct {
	bytes, deltas int64
}

func (s *scanner) reset() {
	t, out := s.tree, s.out
	*s = scanner{tree: t, member: 0, out: out}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// step advances the scanner by one byte, recording into v what ends under a
// leaf.
func (s *scanner) step(c byte, v *values) {
	switch s.state {
	case jValue, jArrayFirst:
		if isSpace(c) {
			return
		}
		if c == ']' && s.state == jArrayFirst {
			s.close(c)
			return
		}
		s.value(c)
	case jObjectFirst, jKey:
		switch {
		case isSpace(c):
		case c == '"':
			s.state, s.keyLen = jKeyString, 0
		case c == '}' && s.state == jObjectFirst:
			s.close(c)
		default:
			s.state = jBad
		}
	case jKeyString:
		switch c {
		case '"':
			s.state = jColon
		case '\\':
			// An escaped key is none of the plain keys the tree holds.
			s.state, s.keyLen = jKeyEscape, maxKey+1
		default:
			s.keep(c)
		}
	case jKeyEscape:
		s.state = jKeyString
	case jColon:
		switch {
		case isSpace(c):
		case c == ':':
			s.member = s.child()
			s.state = jValue
		default:
			s.state = jBad
		}
	case jString:
		switch c {
		case '"':
			s.endString(v)
			s.state = jAfter
		case '\\':
			s.state, s.keyLen = jStringEscape, maxKey+1
		default:
			// Only a string under a leaf is compared or counted; any
			// other is skipped unread.
			if s.member >= 0 {
				s.keep(c)
				s.count()
			}
		}
	case jStringEscape:
		// The escaped character counts as one byte of output (the 4 hex
		// digits of a \u escape as one each: more, never less).
		s.count()
		s.state = jString
	case jNumber:
		switch {
		case c >= '0' && c <= '9':
			if s.num > maxTokens {
				s.numBad = true
			} else {
				s.num = s.num*10 + uint64(c-'0')
			}
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
			s.numBad = true
		default:
			s.endNumber(v)
			s.state = jAfter
			s.after(c)
		}
	case jLiteral:
		if c >= 'a' && c <= 'z' {
			return
		}
		s.state = jAfter
		s.after(c)
	case jAfter:
		s.after(c)
	case jDone:
		if !isSpace(c) {
			s.state = jBad
		}
	case jBad:
	}
}

// keep adds c to the key buffer, or marks the buffer too long to match.
func (s *scanner) keep(c byte) {
	if s.keyLen < maxKey {
		s.key[s.keyLen] = c
		s.keyLen++
	} else {
		s.keyLen = maxKey + 1
	}
}

// value starts the value whose first byte is c.
func (s *scanner) value(c byte) {
	switch {
	case c == '{' || c == '[':
		s.open(c)
	case c == '"':
		s.state, s.keyLen = jString, 0
		s.counting, s.strLen = s.member >= 0 && s.tree.nodes[s.member].counted, 0
	case c >= '0' && c <= '9':
		s.state, s.num, s.numBad = jNumber, uint64(c-'0'), false
	case c == '-':
		s.state, s.num, s.numBad = jNumber, 0, true
	case c >= 'a' && c <= 'z':
		s.state = jLiteral
	default:
		s.state = jBad
	}
}

func (s *scanner) open(c byte) {
	if s.depth == maxDepth {
		s.state = jBad
		return
	}
	d := s.depth
	s.depth++
	node := s.member
	if c == '[' {
		s.array |= 1 << d
		if node >= 0 && !s.tree.nodes[node].elems {
			node = -1 // no path runs through an array, but for a "key[]"
		}
		s.state = jArrayFirst
	} else {
		s.array &^= 1 << d
		s.state = jObjectFirst
	}
	if int(d) < len(s.node) {
		s.node[d] = node
	}
	s.member = -1
	if c == '[' {
		s.member = s.element()
	}
}

// element is the node of the elements of the array now open: its own for a
// "key[]", else -1.
func (s *scanner) element() int16 {
	if int(s.depth) > len(s.node) {
		return -1
	}
	return s.node[s.depth-1]
}

// count counts a byte of a counted string.
func (s *scanner) count() {
	if s.counting {
		s.strLen++
		s.out.bytes++
	}
}

func (s *scanner) close(c byte) {
	if s.depth == 0 || (c == ']') != s.inArray() {
		s.state = jBad
		return
	}
	s.depth--
	s.member = -1
	if s.depth == 0 {
		s.state = jDone
	} else {
		s.state = jAfter
	}
}

func (s *scanner) inArray() bool { return s.depth > 0 && s.array&(1<<(s.depth-1)) != 0 }

// after handles c where a value has just ended.
func (s *scanner) after(c byte) {
	switch {
	case s.depth == 0:
		s.state = jDone
		s.step(c, nil)
	case isSpace(c):
	case c == ',':
		if s.inArray() {
			s.state, s.member = jValue, s.element()
		} else {
			s.state = jKey
		}
	case c == '}' || c == ']':
		s.close(c)
	default:
		s.state = jBad
	}
}

// child returns the tree node under the current key of the enclosing
// object, or -1.
func (s *scanner) child() int16 {
	if s.depth == 0 || int(s.depth) > len(s.node) || s.keyLen > maxKey {
		return -1
	}
	parent := s.node[s.depth-1]
	if parent < 0 {
		return -1
	}
	return s.tree.child(parent, s.key[:s.keyLen])
}

// endString records 1 if the string just read is the one its leaf wants.
// A counted string is one delta if it holds any text.
func (s *scanner) endString(v *values) {
	if s.counting {
		s.counting = false
		if s.strLen > 0 {
			s.out.deltas++
		}
	}
	if s.member < 0 || v == nil {
		return
	}
	n := &s.tree.nodes[s.member]
	if n.slot >= 0 && (n.is == "*" || n.is != "" && s.keyLen <= maxKey && n.is == string(s.key[:s.keyLen])) {
		v.set(n.slot, 1)
	}
}

// endNumber records the number just read if it ends under a leaf.
func (s *scanner) endNumber(v *values) {
	if s.member < 0 || s.numBad || v == nil {
		return
	}
	if n := &s.tree.nodes[s.member]; n.slot >= 0 && n.is == "" {
		v.set(n.slot, int64(s.num))
	}
}

// values are the counts a reader has recorded, by slot.
type values struct {
	n    [numSlots]int64
	seen uint16
}

func (v *values) set(slot int8, n int64) {
	v.n[slot] = n
	v.seen |= 1 << slot
}

func (v *values) has(slot int8) bool { return v.seen&(1<<slot) != 0 }

// merge copies into v what w recorded, and empties w.
func (v *values) merge(w *values) {
	for slot := int8(0); slot < numSlots; slot++ {
		if w.has(slot) {
			v.set(slot, w.n[slot])
		}
	}
	*w = values{}
}

// SSE line states.
const (
	lineStart uint8 = iota // at the start of a line
	lineField              // reading the field name
	lineSpace              // after "data:", where one space is dropped
	lineData               // inside a data value, fed to the scanner
	lineSkip               // inside a line that is not data
)

// sse splits an event stream into its events' data, per the HTML standard's
// event-stream interpretation: lines end in CRLF, LF or CR; a line of
// "data:" (one optional space after the colon) adds its value and a newline
// to the event's data; a blank line dispatches the event; a line starting
// with ':' is a comment. Each event's data is one JSON document.
type sse struct {
	state    uint8
	afterCR  bool // the last byte was CR: a LF now ends nothing more
	field    [maxField]byte
	fieldLen uint8
	data     bool // the event being read has data
}

// reader is the Reader for a JSON or SSE body of a provider whose usage
// lives where its tree says.
//
// What a document records counts only once the document is whole: a JSON
// body read to its closing brace, an event dispatched by its blank line
// with a well-formed document as its data. A body cut short — the caller
// closed it early, the connection dropped — leaves its last document out, so
// a count is never taken from a number that may have lost digits, nor from an
// event the provider did not finish sending.
type reader struct {
	scanner
	sse     sse
	stream  bool // the body is an event stream, not one JSON document
	ended   bool
	pending values // recorded by the document being read
	values  values // recorded by whole documents
	result  func(v *values, stream bool) (Usage, bool)
}

func (r *reader) Observe(p []byte) {
	if r.ended {
		return
	}
	if !r.stream {
		for _, c := range p {
			if r.scanner.state == jBad {
				return
			}
			r.scanner.step(c, &r.pending)
		}
		return
	}
	for _, c := range p {
		r.sseStep(c)
	}
}

func (r *reader) sseStep(c byte) {
	l := &r.sse
	if l.afterCR {
		l.afterCR = false
		if c == '\n' {
			return
		}
	}
	if c == '\r' || c == '\n' {
		l.afterCR = c == '\r'
		r.endLine()
		return
	}
	switch l.state {
	case lineStart:
		if c == ':' {
			l.state = lineSkip
			return
		}
		l.state, l.fieldLen = lineField, 0
		fallthrough
	case lineField:
		if c == ':' {
			if l.isData() {
				l.state = lineSpace
				r.beginData()
			} else {
				l.state = lineSkip
			}
			return
		}
		if l.fieldLen < maxField {
			l.field[l.fieldLen] = c
		}
		if l.fieldLen <= maxField {
			l.fieldLen++
		}
	case lineSpace:
		l.state = lineData
		if c == ' ' {
			return
		}
		r.scanner.step(c, &r.pending)
	case lineData:
		r.scanner.step(c, &r.pending)
	case lineSkip:
	}
}

func (l *sse) isData() bool { return l.fieldLen == 4 && string(l.field[:4]) == "data" }

// beginData starts a data line: the first of an event begins a document,
// any later one continues it after the newline that joins them.
func (r *reader) beginData() {
	if !r.sse.data {
		r.sse.data = true
		r.scanner.reset()
		return
	}
	r.scanner.step('\n', &r.pending)
}

func (r *reader) endLine() {
	l := &r.sse
	switch l.state {
	case lineStart: // a blank line dispatches the event
		if l.data {
			r.commit()
			l.data = false
		}
	case lineField: // a field name alone: "data" adds an empty line
		if l.isData() {
			r.beginData()
		}
	}
	l.state = lineStart
}

// commit keeps what the document just read recorded if it is whole.
func (r *reader) commit() {
	if r.scanner.state == jDone {
		r.values.merge(&r.pending)
	}
	r.pending = values{}
}

// Streamed returns what the stream showed before it ended without the
// provider's final usage: see Counter.
func (r *reader) Streamed() (Streamed, bool) {
	v := &r.values
	hidden := v.has(slotHidden) || r.pending.has(slotHidden)
	if !r.stream || hidden || !r.ended || !(v.has(slotStreaming) || v.has(slotInput) || r.out.deltas > 0) {
		return Streamed{}, false
	}
	u, final := r.result(v, r.stream)
	if final {
		return Streamed{}, false
	}
	s := Streamed{Usage: u, InputKnown: v.has(slotInput)}
	if !s.InputKnown {
		s.Input, s.CacheRead, s.CacheWrite, s.CacheWrite1h = 0, 0, 0, 0
	}
	s.Output = max(u.Output, r.out.tokens())
	return s, true
}

// tokens is the output counted, in tokens: see StreamBytesPerToken.
func (c streamCount) tokens() int64 {
	return max(c.deltas, (c.bytes+StreamBytesPerToken-1)/StreamBytesPerToken)
}

func (r *reader) End() (Usage, bool) {
	if !r.ended {
		r.ended = true
		if !r.stream {
			r.commit()
		}
		// An event not dispatched by a blank line is discarded, as the
		// event-stream standard says.
	}
	return r.result(&r.values, r.stream)
}
