package memory

import "time"

// Limits of the memory family (docs/agent-tools.md#memory-and-skills). Every store enforces the
// storage limits itself as a defence, and the Engine enforces them before a store is asked.
const (
	// MaxDocumentBytes bounds one document: 64 KiB keeps a whole document inside one tool result
	// and one model turn, and equals the kernel's tool-input bound, so any document can be
	// written back in a single memory_write.
	MaxDocumentBytes = 65536

	// MaxDocumentsPerAnchor bounds the documents one owner (a conversation, workspace or user)
	// holds, skills included: 64 keeps a full listing short enough to read in one call and
	// bounds the work of a grep over one anchor to 4 MiB.
	MaxDocumentsPerAnchor = 64

	// MaxNameBytes bounds a document name: 255 bytes is the common filename limit, so a name
	// survives being shown, exported or used as a file name anywhere.
	MaxNameBytes = 255

	// MaxReadLines is the most lines one memory_read returns: 2,000 lines of ordinary text stays
	// within a model's comfortable single-result size, and the footer says how to continue.
	MaxReadLines = 2000

	// DefaultGrepLimit is memory_grep's match cap when the model gives none: enough to survey a
	// topic, small enough not to flood the turn.
	DefaultGrepLimit = 100

	// MaxGrepLimit is the largest limit a model may ask for: 500 lines of at most 500 characters
	// bound a grep result near the executor's result bound.
	MaxGrepLimit = 500

	// MaxGrepLineChars bounds the text of one match line, so a single huge line (a minified blob)
	// cannot fill the result; a cut line ends with GrepClampMark.
	MaxGrepLineChars = 500

	// GrepBudget is the whole search's time budget across every binding: RE2 is linear, so the
	// budget bounds the volume scanned, and one second keeps a kernel worker from being held by
	// a search.
	GrepBudget = time.Second

	// MaxPathDetailChars clips a path quoted in a refusal: enough to recognise the path, short
	// enough that a refusal stays one readable line.
	MaxPathDetailChars = 120

	// MaxPatternDetailChars clips a pattern quoted in a refusal; patterns are denser than paths,
	// so fewer characters identify one.
	MaxPatternDetailChars = 80

	// MaxBindingNameLength is the longest root name ([a-z][a-z0-9_-]{0,31}): a root is a short
	// word a model types at the front of every path.
	MaxBindingNameLength = 32

	// MaxSkillNameChars bounds a skill name (docs/agent-tools.md#memory-and-skills): it appears in
	// every skills block line and as a callable argument, so it stays short.
	MaxSkillNameChars = 64

	// MaxSkillDescriptionBytes bounds a skill's description: it is the one line each skill costs
	// in every skills block, so 1 KiB is generous for a sentence and bounds the block.
	MaxSkillDescriptionBytes = 1024

	// WrittenAtPrecision is the precision of a stored write time: microseconds are what
	// PostgreSQL's timestamptz keeps, so every store can return exactly what it was sent.
	WrittenAtPrecision = time.Microsecond
)

// GrepClampMark ends a match line cut at MaxGrepLineChars characters.
const GrepClampMark = "…"

// SkillsFolder is the first name segment reserved for skill documents: models never write,
// edit or delete under it (docs/agent-tools.md#memory-and-skills).
const SkillsFolder = "skills"

// StoredTime is the write time a store keeps for t: UTC, cut to WrittenAtPrecision. The Engine
// sends times already in this form; stores apply it too so that a direct caller gets the same
// answer from every store.
func StoredTime(t time.Time) time.Time {
	return t.UTC().Truncate(WrittenAtPrecision)
}
