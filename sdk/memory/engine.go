package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Engine implements the six memory tools over a Provider (docs/agent-tools.md#memory-and-skills):
// argument handling, path and prefix resolution against the call's frozen bindings, the refusal
// words and their details, ordering across roots, the limits, and every result text and title. It
// holds no state of its own beyond its configuration, so one Engine serves concurrent calls.
type Engine struct {
	// Provider stores the documents.
	Provider Provider
	// Now is the kernel clock written into writes and edits; nil means time.Now.
	Now func() time.Time
	// GrepBudget bounds a whole memory_grep; zero means the GrepBudget constant. Tests shorten it
	// to force memory_pattern_too_costly.
	GrepBudget time.Duration
}

// Result is what a memory call settles with: the kernel or the plugin host commits it as the
// task's result envelope.
type Result struct {
	// Text is the content, one plain string. An empty text is a blank result.
	Text string
	// IsError is true for a refusal.
	IsError bool
	// Title is the UI-only one-line header.
	Title string
	// StructuredContent is the structured_content to settle with; nil means absent. The memory
	// family sets none, refusals included (docs/agent-tools.md#memory-and-skills).
	StructuredContent json.RawMessage
}

// RunOptions adjusts one call.
type RunOptions struct {
	// Replay says the host is re-running a call that may have run before (after a provider crash,
	// or on another server instance after the one that held it died): a memory_delete that finds
	// its document already gone then answers as if it had deleted it
	// (docs/agent-tools.md#memory-and-skills).
	Replay bool
}

// Run executes one memory call. tool is a memory tool's wire or canonical name; input is the call's
// JSON object; bindings is the call's resolved memory configuration
// (docs/agent-tools.md#memory-and-skills).
//
// Every refusal and every store failure is answered as a Result. Run returns a non-nil error
// only when the call did not complete at a store: ctx ended (canceled, or its deadline passed),
// or the Provider is a plugin whose process is gone (plugin.ErrPluginShutdown, which the host
// handles as a crash, docs/plugins.md#crashes). The caller then settles nothing and the row follows
// the expiry rule or is replayed. A panic inside the Provider is answered as memory_unavailable.
func (e *Engine) Run(ctx context.Context, tool string, input json.RawMessage, bindings []Scope, opt RunOptions) (res Result, err error) {
	v, known := verbs[tool]
	if !known {
		return refused(&refusal{code: CodeUnknownVerb, detail: tool}), nil
	}
	set, usable := newBindingSet(bindings)
	if !usable || e.Provider == nil {
		return unavailable(), nil
	}
	args, parsed := decodeArguments(input)
	if !parsed {
		return refused(&refusal{code: CodePathInvalid}), nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	defer func() {
		if recover() != nil {
			res, err = unavailable(), nil
		}
	}()
	switch v {
	case verbLs:
		return e.ls(ctx, args, set)
	case verbRead:
		return e.read(ctx, args, set)
	case verbGrep:
		return e.grep(ctx, args, set)
	case verbWrite:
		return e.write(ctx, args, set)
	case verbEdit:
		return e.edit(ctx, args, set)
	default:
		return e.delete(ctx, args, set, opt)
	}
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return StoredTime(e.Now())
	}
	return StoredTime(time.Now())
}

func refused(r *refusal) Result {
	return Result{Text: r.text(), IsError: true, Title: TitleRefused}
}

func unavailable() Result {
	return refused(&refusal{code: CodeUnavailable, detail: UnavailableDetail})
}

// errorCode pairs a store sentinel with the refusal word it becomes for one verb.
type errorCode struct {
	sentinel error
	code     string
}

var (
	readErrors   = []errorCode{{ErrNameInvalid, CodePathInvalid}, {ErrNotFound, CodeNotFound}}
	writeErrors  = []errorCode{{ErrNameInvalid, CodePathInvalid}, {ErrReadOnly, CodeReadOnly}, {ErrContentInvalid, CodeContentInvalid}, {ErrTooLarge, CodeTooLarge}, {ErrFull, CodeFull}}
	editErrors   = []errorCode{{ErrNameInvalid, CodePathInvalid}, {ErrReadOnly, CodeReadOnly}, {ErrContentInvalid, CodeContentInvalid}, {ErrNotFound, CodeNotFound}, {ErrEditNotFound, CodeEditNotFound}, {ErrEditAmbiguous, CodeEditAmbiguous}, {ErrTooLarge, CodeTooLarge}}
	deleteErrors = []errorCode{{ErrNameInvalid, CodePathInvalid}, {ErrReadOnly, CodeReadOnly}, {ErrNotFound, CodeNotFound}}
)

// storeFailure turns a store error into the call's answer. When ctx itself ended, or the
// plugin process serving the store is gone (plugin.ErrPluginShutdown), the call did not complete
// and the error is returned instead. A sentinel the verb expects becomes its refusal word with
// the path as detail; anything else (ErrUnavailable, ErrInvalidArgument, an unknown error) is
// memory_unavailable.
func storeFailure(ctx context.Context, err error, path string, codes []errorCode) (Result, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, ctxErr
	}
	if errors.Is(err, plugin.ErrPluginShutdown) {
		return Result{}, err
	}
	for _, c := range codes {
		if errors.Is(err, c.sentinel) {
			return refused(pathRefusal(c.code, path)), nil
		}
	}
	return unavailable(), nil
}

func (e *Engine) read(ctx context.Context, args arguments, set bindingSet) (Result, error) {
	t, r := resolvePath(verbRead, args, set)
	if r != nil {
		return refused(r), nil
	}
	resp, err := e.Provider.Read(ctx, &ReadRequest{Scope: t.scope, Name: t.name})
	if err != nil {
		return storeFailure(ctx, err, t.path, readErrors)
	}
	if resp == nil {
		return unavailable(), nil
	}
	offset, ok := args.integer("offset")
	if !ok {
		offset = 1
	}
	limit, ok := args.integer("limit")
	if !ok {
		limit = MaxReadLines
	}
	return Result{Text: ReadSlice(resp.Content, offset, limit), Title: "read " + t.path}, nil
}

func (e *Engine) write(ctx context.Context, args arguments, set bindingSet) (Result, error) {
	t, r := resolvePath(verbWrite, args, set)
	if r != nil {
		return refused(r), nil
	}
	content, ok := args.str("content")
	if !ok || strings.IndexByte(content, 0) >= 0 {
		return refused(pathRefusal(CodeContentInvalid, t.path)), nil
	}
	if len(content) > MaxDocumentBytes {
		return refused(pathRefusal(CodeTooLarge, t.path)), nil
	}
	resp, err := e.Provider.Write(ctx, &WriteRequest{Scope: t.scope, Name: t.name, Content: content, WrittenAt: e.now()})
	if err != nil {
		return storeFailure(ctx, err, t.path, writeErrors)
	}
	if resp == nil {
		return unavailable(), nil
	}
	return Result{
		Text:  "Wrote " + t.path + " (" + strconv.FormatInt(resp.Entry.SizeBytes, 10) + " bytes).",
		Title: "wrote " + t.path,
	}, nil
}

func (e *Engine) edit(ctx context.Context, args arguments, set bindingSet) (Result, error) {
	t, r := resolvePath(verbEdit, args, set)
	if r != nil {
		return refused(r), nil
	}
	oldText, okOld := args.str("old_text")
	newText, okNew := args.str("new_text")
	if !okOld || oldText == "" || !okNew {
		return refused(pathRefusal(CodeEditInvalid, t.path)), nil
	}
	if strings.IndexByte(newText, 0) >= 0 {
		return refused(pathRefusal(CodeContentInvalid, t.path)), nil
	}
	resp, err := e.Provider.Edit(ctx, &EditRequest{Scope: t.scope, Name: t.name, OldText: oldText, NewText: newText, WrittenAt: e.now()})
	if err != nil {
		return storeFailure(ctx, err, t.path, editErrors)
	}
	if resp == nil {
		return unavailable(), nil
	}
	return Result{Text: "Edited " + t.path + ".", Title: "edited " + t.path}, nil
}

func (e *Engine) delete(ctx context.Context, args arguments, set bindingSet, opt RunOptions) (Result, error) {
	t, r := resolvePath(verbDelete, args, set)
	if r != nil {
		return refused(r), nil
	}
	resp, err := e.Provider.Delete(ctx, &DeleteRequest{Scope: t.scope, Name: t.name})
	if err != nil && !(opt.Replay && errors.Is(err, ErrNotFound)) {
		return storeFailure(ctx, err, t.path, deleteErrors)
	}
	if err == nil && resp == nil {
		return unavailable(), nil
	}
	return Result{Text: "Deleted " + t.path + ".", Title: titleDeleted}, nil
}

func (e *Engine) ls(ctx context.Context, args arguments, set bindingSet) (Result, error) {
	sels, r := resolvePrefix(args, set)
	if r != nil {
		return refused(r), nil
	}
	var b strings.Builder
	n := 0
	for _, sel := range sels {
		resp, err := e.Provider.Ls(ctx, &LsRequest{Scope: sel.scope, NamePrefix: sel.prefix})
		if err != nil {
			return storeFailure(ctx, err, "", nil)
		}
		if resp == nil {
			return unavailable(), nil
		}
		for _, entry := range resp.Entries {
			if n > 0 {
				b.WriteByte('\n')
			}
			n++
			b.WriteString(sel.scope.Binding)
			b.WriteByte('/')
			b.WriteString(entry.Name)
			b.WriteString("  ")
			b.WriteString(strconv.FormatInt(entry.SizeBytes, 10))
			b.WriteString(" bytes  ")
			b.WriteString(entry.WrittenAt.UTC().Format(time.RFC3339))
		}
	}
	if n == 0 {
		return Result{Text: textNoDocuments, Title: titleNoDocuments}, nil
	}
	return Result{Text: b.String(), Title: strconv.Itoa(n) + " memory documents"}, nil
}

func (e *Engine) grep(ctx context.Context, args arguments, set bindingSet) (Result, error) {
	sels, r := resolvePrefix(args, set)
	if r != nil {
		return refused(r), nil
	}
	pattern, ok := args.str("pattern")
	if !ok {
		return refused(&refusal{code: CodePatternInvalid}), nil
	}
	ignoreCase := args.isTrue("ignore_case")
	if _, err := CompilePattern(pattern, ignoreCase); err != nil {
		return refused(patternRefusal(CodePatternInvalid, pattern)), nil
	}
	limit, ok := args.integer("limit")
	if !ok {
		limit = DefaultGrepLimit
	}
	limit = min(max(limit, 1), MaxGrepLimit)

	budget := e.GrepBudget
	if budget <= 0 {
		budget = GrepBudget
	}
	searchCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	var matches []string
	truncated := false
	for _, sel := range sels {
		// Once the limit is held, a limit-0 search of the next binding only asks whether one
		// more match exists anywhere.
		remaining := int(limit) - len(matches)
		resp, err := e.Provider.Grep(searchCtx, &GrepRequest{
			Scope: sel.scope, NamePrefix: sel.prefix, Pattern: pattern, IgnoreCase: ignoreCase, Limit: remaining,
		})
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return Result{}, ctxErr
			}
			if errors.Is(err, plugin.ErrPluginShutdown) {
				return Result{}, err
			}
			if errors.Is(err, ErrPatternTooCostly) || searchCtx.Err() != nil {
				return refused(patternRefusal(CodePatternTooCostly, pattern)), nil
			}
			if errors.Is(err, ErrPatternInvalid) {
				return refused(patternRefusal(CodePatternInvalid, pattern)), nil
			}
			return unavailable(), nil
		}
		if resp == nil {
			return unavailable(), nil
		}
		found := resp.Matches
		if len(found) > remaining { // a store that answered more than asked is cut back
			found, resp.Truncated = found[:remaining], true
		}
		for _, m := range found {
			text, clamped := ClampLine(m.Text)
			line := sel.scope.Binding + "/" + m.Name + ":" + strconv.Itoa(m.LineNumber) + ": " + text
			if clamped || m.Clamped {
				line += GrepClampMark
			}
			matches = append(matches, line)
		}
		if resp.Truncated {
			truncated = true
			break
		}
	}
	if len(matches) == 0 && !truncated {
		return Result{Text: textNoMatches, Title: titleNoMatches}, nil
	}
	text := strings.Join(matches, "\n")
	if truncated {
		text += "\n" + textGrepLimit
	}
	return Result{Text: text, Title: strconv.Itoa(len(matches)) + " matches"}, nil
}
