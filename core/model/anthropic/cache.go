package anthropic

// MaxCacheMarkers is the provider's maximum number of cache breakpoints in one request.
const MaxCacheMarkers = 4

// cacheMarker is appended inside a marked block, before its closing brace.
const cacheMarker = `,"cache_control":{"type":"ephemeral"}}`

// markCache places the cache breakpoints (at most four): the last tool definition that is not
// deferred; the last system block; the last block of the user message just before the final
// assistant message, where the previous request of the lineage ended; the last block of the
// final message. Markers 1 and 2 let runs of one agent share the tools-and-instructions prefix;
// 3 and 4 make each round of a lineage a cache hit for the next. A marker whose target does not
// exist is skipped.
func markCache(tools, system []block, msgs []wmsg) {
	marks := 0
	mark := func(b *block) {
		if marks >= MaxCacheMarkers || len(b.b) == 0 || b.b[len(b.b)-1] != '}' {
			return
		}
		b.b = append(b.b[:len(b.b)-1:len(b.b)-1], cacheMarker...)
		marks++
	}
	for i := len(tools) - 1; i >= 0; i-- {
		if tools[i].kind == "tool" {
			mark(&tools[i])
			break
		}
	}
	if n := len(system); n > 0 {
		mark(&system[n-1])
	}
	lastAssistant := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].role == "assistant" {
			lastAssistant = i
			break
		}
	}
	before := -1
	if lastAssistant > 0 && msgs[lastAssistant-1].role == "user" {
		before = lastAssistant - 1
		mark(&msgs[before].blocks[len(msgs[before].blocks)-1])
	}
	if n := len(msgs); n > 0 && n-1 != before {
		mark(&msgs[n-1].blocks[len(msgs[n-1].blocks)-1])
	}
}
