package usage

import "strings"

// Slots: where a reader records the counts it finds. What each means, and
// how the slots make a Usage, is up to the provider's result function.
const (
	slotInput        int8 = iota // input tokens (OpenAI: with cached and cache-written)
	slotCacheRead                // input tokens read from the prompt cache
	slotCacheWrite               // input tokens written to the cache, all durations
	slotCacheWrite5m             // of which to the 5-minute cache (Anthropic)
	slotCacheWrite1h             // of which to the 1-hour cache (Anthropic)
	slotOutput                   // output tokens, final
	slotOutputSoFar              // output tokens counted when a stream began (Anthropic)
	slotStopped                  // the stream said it ended (Anthropic's message_stop)
	slotStreaming                // an event only a stream sends (a chunk, response.created)
	slotHidden                   // the stream has output it does not show (reasoning)
	numSlots
)

// A tree holds the JSON paths a provider's usage is read from. Node 0 is
// the document's root; a node with a slot is a leaf whose integer value is
// recorded there.
type tree struct {
	nodes []treeNode
}

type treeNode struct {
	key      string
	slot     int8 // -1: not a leaf
	children []int16
	// is, when set, makes the leaf record 1 when its value is this string
	// (at most maxKey bytes), instead of recording an integer; "*" matches
	// any string.
	is string
	// counted: the leaf's string value is output that streamed past (a
	// delta), whose bytes the reader counts (streamCount).
	counted bool
	// elems: an array under this node has elements read as the node
	// itself ("choices[]"); under any other array nothing is read.
	elems bool
}

// newTree builds a tree from dotted paths ("usage.prompt_tokens_details.
// cached_tokens") and the slot each records into. A path may end in
// "=value" ("type=message_stop"): its leaf records 1 when its value is that
// string. A key may end in "[]" ("choices[]"): the elements of an array
// under it are read as the key itself. counted are the paths of strings
// whose bytes are output (see streamCount).
func newTree(paths map[string]int8, counted ...string) *tree {
	t := &tree{nodes: []treeNode{{slot: -1}}}
	for path, slot := range paths {
		path, is, _ := strings.Cut(path, "=")
		n := t.path(path)
		t.nodes[n].slot, t.nodes[n].is = slot, is
	}
	for _, path := range counted {
		t.nodes[t.path(path)].counted = true
	}
	return t
}

// path returns the node of a dotted path, adding the nodes it lacks.
func (t *tree) path(path string) int16 {
	n := int16(0)
	for _, key := range strings.Split(path, ".") {
		key, elems := strings.CutSuffix(key, "[]")
		c := t.child(n, []byte(key))
		if c < 0 {
			c = int16(len(t.nodes))
			t.nodes = append(t.nodes, treeNode{key: key, slot: -1})
			t.nodes[n].children = append(t.nodes[n].children, c)
		}
		t.nodes[c].elems = t.nodes[c].elems || elems
		n = c
	}
	return n
}

// child returns the child of node n under key, or -1. The trees are a few
// dozen nodes, each with a handful of children: a scan is quicker than a map
// and allocates nothing.
func (t *tree) child(n int16, key []byte) int16 {
	for _, c := range t.nodes[n].children {
		if t.nodes[c].key == string(key) {
			return c
		}
	}
	return -1
}
