package memory

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Doors are the member memory doors (docs/api.md#memory): how people and their programs read and
// write the workspace/ and user/ roots, and author skills. Reads (List, Show, Grep) go where the
// agents' memory calls go: the kernel store, or the memory plugin the workspace's override names,
// through the same Provider calls the memory Engine makes; so do writes, edits and deletes, their
// conditions carried as the Provider's Expect (a plugin before protocol 1.3 cannot keep them and
// is refused memory_conditions_unsupported). Skill documents (names under skills/) stay in the
// kernel store. Every refusal is a refusal.Error with memory's words. Standing (read or write
// standing in the workspace) is the caller's to check first.
type Doors struct {
	store    *Store
	resolver *Resolver
	backings Backings
	now      func() time.Time
	// grepBudget bounds one grep; tests shorten it.
	grepBudget time.Duration
}

// DoorsOptions adjust NewDoors.
type DoorsOptions struct {
	// Now is the clock written into writes and edits; nil means time.Now.
	Now func() time.Time
	// GrepBudget bounds one grep; zero means memory.GrepBudget.
	GrepBudget time.Duration
	// Backings answers where each workspace's memory lives; nil keeps every workspace on the
	// kernel store.
	Backings Backings
}

// NewDoors returns the member doors over a store, using resolver for the caller's controlling
// person.
func NewDoors(s *Store, resolver *Resolver, opts DoorsOptions) *Doors {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.GrepBudget <= 0 {
		opts.GrepBudget = memsdk.GrepBudget
	}
	return &Doors{store: s, resolver: resolver, backings: opts.Backings, now: opts.Now, grepBudget: opts.GrepBudget}
}

// Caller is who calls a door and in which workspace; its standing is already checked.
type Caller struct {
	WorkspaceID       int64
	WorkspacePublicID string
	Principal         Principal
}

// Document is a memory document as the doors show it.
type Document struct {
	// Path is the logical path, <root>/<name>.
	Path string
	// PublicID is the kernel's public id of the document, or the memory plugin's id of it; ""
	// for a plugin's document without an id (written before protocol 1.3, until its next write).
	PublicID string
	// LockVersion is the kernel's lock version, or a provider's version (1 on create, one more
	// per replace or edit).
	LockVersion int64
	Bytesize    int64
	// Description is set on skill documents only.
	Description *string
	WrittenAt   time.Time
	// Content is set by Show alone.
	Content *string
}

func documentOf(root string, d *store.MemoryDocument, withContent bool) Document {
	doc := Document{
		Path: root + "/" + d.Name, PublicID: d.PublicID, LockVersion: d.LockVersion,
		Bytesize: d.Bytesize, WrittenAt: timeOf(d.WrittenAtUS),
	}
	if d.Description.Valid {
		desc := d.Description.String
		doc.Description = &desc
	}
	if withContent {
		content := d.Content
		doc.Content = &content
	}
	return doc
}

// providerDocument is a memory plugin's document: its id is the public id a condition names.
func providerDocument(root string, e *memsdk.Entry, content *string) Document {
	return Document{Path: root + "/" + e.Name, PublicID: e.ID, LockVersion: int64(e.Version), Bytesize: e.SizeBytes, WrittenAt: e.WrittenAt.UTC(), Content: content}
}

// scopes are the two roots a door caller reaches, in root order (user, then workspace): the
// workspace, and the caller's controlling person when there is one.
func (d *Doors) scopes(ctx context.Context, c Caller) ([]memsdk.Scope, error) {
	ws := memsdk.Scope{Binding: RootWorkspace, Kind: memsdk.ScopeWorkspace, OwnerID: c.WorkspacePublicID, Access: memsdk.AccessReadWrite, WorkspaceID: c.WorkspacePublicID}
	person, err := d.resolver.ControllingPerson(ctx, nil, c.Principal)
	if err != nil {
		return nil, err
	}
	if person == "" {
		return []memsdk.Scope{ws}, nil
	}
	user := memsdk.Scope{Binding: RootUser, Kind: memsdk.ScopeUser, OwnerID: person, Access: memsdk.AccessReadWrite, WorkspaceID: c.WorkspacePublicID}
	return []memsdk.Scope{user, ws}, nil
}

func lookup(scopes []memsdk.Scope, root string) (memsdk.Scope, bool) {
	for _, s := range scopes {
		if s.Binding == root {
			return s, true
		}
	}
	return memsdk.Scope{}, false
}

// target is a resolved door path.
type target struct {
	path  string
	scope memsdk.Scope
	name  string
	// skill is set for a path under skills/.
	skill bool
}

// resolvePath applies the document-path rules (docs/agent-tools.md#memory-and-skills, without the
// reserved prefix: these doors are where skills are written): not a string or no valid name is
// memory_path_invalid, a root the caller does not reach (conversation/ included) is
// memory_scope_unavailable.
func resolvePath(raw field, scopes []memsdk.Scope) (target, error) {
	path, ok := raw.str()
	if !ok {
		return target{}, refuse422(memsdk.CodePathInvalid, pathPath, "%s must be a string <root>/<name>.", pathPath)
	}
	root, name, hasSlash := strings.Cut(path, "/")
	if !hasSlash || memsdk.ValidName(name) != nil {
		return target{}, refuse422(memsdk.CodePathInvalid, pathPath, "%q is not a memory path <root>/<name>.", path)
	}
	scope, bound := lookup(scopes, root)
	if !bound {
		return target{}, refuse422(memsdk.CodeScopeUnavailable, pathPath, "%q: the member doors reach the workspace/ and user/ roots.", path)
	}
	return target{path: path, scope: scope, name: name, skill: memsdk.IsReservedName(name)}, nil
}

// resolveWrite applies a write's path and description rules in the order
// (docs/agent-tools.md#memory-and-skills): for a path under skills/, skill_name_invalid,
// skill_scope_unavailable, skill_description_required, memory_description_invalid; for any other,
// memory_path_invalid, memory_scope_unavailable, and memory_description_invalid for a description
// sent at all.
func resolveWrite(rawPath, rawDesc field, scopes []memsdk.Scope) (target, *string, error) {
	path, ok := rawPath.str()
	if !ok {
		return target{}, nil, refuse422(memsdk.CodePathInvalid, pathPath, "%s must be a string <root>/<name>.", pathPath)
	}
	root, name, hasSlash := strings.Cut(path, "/")
	if !hasSlash {
		return target{}, nil, refuse422(memsdk.CodePathInvalid, pathPath, "%q is not a memory path <root>/<name>.", path)
	}
	if !memsdk.IsReservedName(name) {
		t, err := resolvePath(rawPath, scopes)
		if err != nil {
			return target{}, nil, err
		}
		if !rawDesc.absent() {
			return target{}, nil, refuse422(CodeDescriptionInvalid, pathDescription, "Only skill documents (under skills/) carry a description.")
		}
		return t, nil, nil
	}
	if _, ok := skillName(name); !ok {
		return target{}, nil, refuse422(CodeSkillNameInvalid, pathPath, "%q: a skill is <root>/skills/<name>, the name lowercase words joined by hyphens, at most %d characters.", path, memsdk.MaxSkillNameChars)
	}
	scope, bound := lookup(scopes, root)
	if !bound || (root != RootWorkspace && root != RootUser) {
		return target{}, nil, refuse422(CodeSkillScopeUnavailable, pathPath, "%q: skills live under workspace/skills/ or user/skills/.", path)
	}
	if rawDesc.absent() {
		return target{}, nil, refuse422(CodeSkillDescriptionRequired, pathDescription, "A skill needs a description: the line an agent reads in its skills block.")
	}
	desc, ok := rawDesc.str()
	if !ok {
		return target{}, nil, refuse422(CodeDescriptionInvalid, pathDescription, "%s must be a string.", pathDescription)
	}
	if strings.TrimSpace(desc) == "" {
		return target{}, nil, refuse422(CodeSkillDescriptionRequired, pathDescription, "A skill needs a description that is not blank.")
	}
	if len(desc) > memsdk.MaxSkillDescriptionBytes || memsdk.CheckContent(desc) != nil {
		return target{}, nil, refuse422(CodeDescriptionInvalid, pathDescription, "A description is at most %d bytes of text.", memsdk.MaxSkillDescriptionBytes)
	}
	return target{path: path, scope: scope, name: name, skill: true}, &desc, nil
}

// content reads a written content: not a string or holding U+0000 is memory_content_invalid,
// over the size memory_document_too_large.
func content(raw field) (string, error) {
	s, ok := raw.str()
	if !ok || memsdk.CheckContent(s) != nil {
		return "", refuse422(memsdk.CodeContentInvalid, pathContent, "%s must be text without U+0000.", pathContent)
	}
	if len(s) > memsdk.MaxDocumentBytes {
		return "", refuse422(memsdk.CodeTooLarge, pathContent, "A document holds at most %d bytes; this one has %d.", memsdk.MaxDocumentBytes, len(s))
	}
	return s, nil
}

// stateRefusal turns a store's answer about the stored state into the door's refusal; other
// errors (a store failure) pass through as server faults.
func stateRefusal(err error, path string) error {
	switch {
	case errors.Is(err, ErrStale):
		return refusal.Newf(refusal.Conflict, CodeStaleObject, "%s is not the document this call expected: read it again.", path).With("path", pathPath)
	case errors.Is(err, memsdk.ErrFull):
		return refuse422(memsdk.CodeFull, pathPath, "%s: its root already holds %d documents.", path, memsdk.MaxDocumentsPerAnchor)
	case errors.Is(err, memsdk.ErrTooLarge):
		return refuse422(memsdk.CodeTooLarge, pathNewText, "%s: the edited document would exceed %d bytes.", path, memsdk.MaxDocumentBytes)
	case errors.Is(err, memsdk.ErrEditNotFound):
		return refuse422(memsdk.CodeEditNotFound, pathOldText, "%s does not contain old_text.", path)
	case errors.Is(err, memsdk.ErrEditAmbiguous):
		return refuse422(memsdk.CodeEditAmbiguous, pathOldText, "old_text occurs more than once in %s.", path)
	case errors.Is(err, memsdk.ErrNotFound):
		return refusal.Newf(refusal.NotFound, memsdk.CodeNotFound, "No memory document %s.", path).With("path", pathPath)
	}
	return err
}

// List answers the documents under a prefix (docs/agent-tools.md#memory-and-skills): "" lists both
// roots, a root or root/ that root, root/x the names of that root starting with x; the order is
// root, then name.
func (d *Doors) List(ctx context.Context, c Caller, prefix string) ([]Document, error) {
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return nil, err
	}
	sels, err := selectPrefix(prefix, scopes, pathQueryPrefix)
	if err != nil {
		return nil, err
	}
	provider := d.lazyProvider(c)
	out := []Document{}
	for _, sel := range sels {
		p, err := provider.forName(ctx, sel.prefix)
		if err != nil {
			return nil, err
		}
		if p != nil {
			resp, err := p.Ls(ctx, &memsdk.LsRequest{Scope: sel.scope, NamePrefix: sel.prefix})
			if err != nil {
				return nil, providerFailure(ctx, err)
			}
			for i := range resp.Entries {
				out = append(out, providerDocument(sel.scope.Binding, &resp.Entries[i], nil))
			}
			continue
		}
		rows, err := d.store.documents(ctx, sel.scope, sel.prefix, false)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			out = append(out, documentOf(sel.scope.Binding, &rows[i], false))
		}
	}
	return out, nil
}

// selection is one root a listing or search covers, with the name prefix inside it.
type selection struct {
	scope  memsdk.Scope
	prefix string
}

func selectPrefix(prefix string, scopes []memsdk.Scope, path string) ([]selection, error) {
	if prefix == "" {
		out := make([]selection, len(scopes))
		for i, s := range scopes {
			out[i] = selection{scope: s}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].scope.Binding < out[j].scope.Binding })
		return out, nil
	}
	root, rest, _ := strings.Cut(prefix, "/")
	scope, bound := lookup(scopes, root)
	if !bound {
		return nil, refuse422(memsdk.CodeScopeUnavailable, path, "%q: the member doors reach the workspace/ and user/ roots.", prefix)
	}
	return []selection{{scope: scope, prefix: rest}}, nil
}

// ShowRequest is POST …/memory/show's memory object.
type ShowRequest struct {
	Path json.RawMessage `json:"path"`
}

// Show answers one document with its content; a missing one is 404 memory_not_found.
func (d *Doors) Show(ctx context.Context, c Caller, req *ShowRequest) (*Document, error) {
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return nil, err
	}
	t, err := resolvePath(field(req.Path), scopes)
	if err != nil {
		return nil, err
	}
	p, err := d.lazyProvider(c).forName(ctx, t.name)
	if err != nil {
		return nil, err
	}
	if p != nil {
		resp, err := p.Read(ctx, &memsdk.ReadRequest{Scope: t.scope, Name: t.name})
		if errors.Is(err, memsdk.ErrNotFound) {
			return nil, stateRefusal(memsdk.ErrNotFound, t.path)
		}
		if err != nil {
			return nil, providerFailure(ctx, err)
		}
		doc := providerDocument(t.scope.Binding, &resp.Entry, &resp.Content)
		return &doc, nil
	}
	row, err := store.MemoryDocumentAt(ctx, d.store.reader(ctx), string(t.scope.Kind), t.scope.OwnerID, t.name, true)
	if errors.Is(err, store.ErrNotFound) {
		return nil, stateRefusal(memsdk.ErrNotFound, t.path)
	}
	if err != nil {
		return nil, err
	}
	doc := documentOf(t.scope.Binding, row, true)
	return &doc, nil
}

// WriteRequest is POST …/memory/write's memory object. Each field is its JSON as sent, nil
// when absent.
type WriteRequest struct {
	Path                json.RawMessage `json:"path"`
	Content             json.RawMessage `json:"content"`
	Description         json.RawMessage `json:"description"`
	ExpectedPublicID    json.RawMessage `json:"expected_public_id"`
	ExpectedLockVersion json.RawMessage `json:"expected_lock_version"`
}

// Write creates (both expected fields null) or wholly replaces (both naming the current
// document) a document, and answers it with whether it was created. Checks run in this order:
// the expected pair (400), the path and description with the skill words (422), the content
// (422), then under the anchor's lock the condition (409 stale_object) and the cap (422
// memory_full). A replace keeps the public id and advances the lock version; a skill's
// description is replaced with the one sent.
func (d *Doors) Write(ctx context.Context, c Caller, req *WriteRequest) (*Document, bool, error) {
	expect, err := expectation(field(req.ExpectedPublicID), field(req.ExpectedLockVersion), true)
	if err != nil {
		return nil, false, err
	}
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return nil, false, err
	}
	t, desc, err := resolveWrite(field(req.Path), field(req.Description), scopes)
	if err != nil {
		return nil, false, err
	}
	text, err := content(field(req.Content))
	if err != nil {
		return nil, false, err
	}
	p, err := d.writeTarget(ctx, c, t)
	if err != nil {
		return nil, false, err
	}
	if p != nil {
		resp, err := p.Write(ctx, &memsdk.WriteRequest{Scope: t.scope, Name: t.name, Content: text, WrittenAt: d.now(), Expect: providerExpect(expect)})
		if err != nil {
			return nil, false, providerRefusal(ctx, err, t.path)
		}
		doc := providerDocument(t.scope.Binding, &resp.Entry, nil)
		return &doc, resp.Created, nil
	}
	row, created, err := d.store.put(ctx, t.scope, t.name, text, d.now(), putOptions{expect: expect, setDescription: true, description: desc})
	if err != nil {
		return nil, false, stateRefusal(err, t.path)
	}
	doc := documentOf(t.scope.Binding, row, false)
	return &doc, created, nil
}

// EditRequest is POST …/memory/edit's memory object.
type EditRequest struct {
	Path                json.RawMessage `json:"path"`
	OldText             json.RawMessage `json:"old_text"`
	NewText             json.RawMessage `json:"new_text"`
	ExpectedPublicID    json.RawMessage `json:"expected_public_id"`
	ExpectedLockVersion json.RawMessage `json:"expected_lock_version"`
}

// Edit replaces the one occurrence of old_text in the expected document, keeping its
// description. Checks: the expected pair (400, non-null), the path (422), old_text and new_text
// (memory_edit_invalid, memory_content_invalid), then under the lock the condition before the
// text (409 stale_object), memory_edit_not_found, memory_edit_ambiguous,
// memory_document_too_large.
func (d *Doors) Edit(ctx context.Context, c Caller, req *EditRequest) (*Document, error) {
	expect, err := expectation(field(req.ExpectedPublicID), field(req.ExpectedLockVersion), false)
	if err != nil {
		return nil, err
	}
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return nil, err
	}
	t, err := resolvePath(field(req.Path), scopes)
	if err != nil {
		return nil, err
	}
	oldText, ok := field(req.OldText).str()
	if !ok || oldText == "" {
		return nil, refuse422(memsdk.CodeEditInvalid, pathOldText, "%s must be a non-empty string.", pathOldText)
	}
	newText, ok := field(req.NewText).str()
	if !ok {
		return nil, refuse422(memsdk.CodeEditInvalid, pathNewText, "%s must be a string.", pathNewText)
	}
	if memsdk.CheckContent(newText) != nil {
		return nil, refuse422(memsdk.CodeContentInvalid, pathNewText, "%s must be text without U+0000.", pathNewText)
	}
	p, err := d.writeTarget(ctx, c, t)
	if err != nil {
		return nil, err
	}
	if p != nil {
		resp, err := p.Edit(ctx, &memsdk.EditRequest{Scope: t.scope, Name: t.name, OldText: oldText, NewText: newText, WrittenAt: d.now(), Expect: providerExpect(expect)})
		if err != nil {
			return nil, providerRefusal(ctx, err, t.path)
		}
		doc := providerDocument(t.scope.Binding, &resp.Entry, nil)
		return &doc, nil
	}
	row, err := d.store.edit(ctx, t.scope, t.name, oldText, newText, d.now(), expect)
	if err != nil {
		return nil, stateRefusal(err, t.path)
	}
	doc := documentOf(t.scope.Binding, row, false)
	return &doc, nil
}

// DeleteRequest is POST …/memory/delete's memory object.
type DeleteRequest struct {
	Path                json.RawMessage `json:"path"`
	ExpectedPublicID    json.RawMessage `json:"expected_public_id"`
	ExpectedLockVersion json.RawMessage `json:"expected_lock_version"`
}

// Delete removes the expected document: the expected pair (400, non-null), the path (422), then
// the condition under the lock (409 stale_object, also when nothing is there).
func (d *Doors) Delete(ctx context.Context, c Caller, req *DeleteRequest) error {
	expect, err := expectation(field(req.ExpectedPublicID), field(req.ExpectedLockVersion), false)
	if err != nil {
		return err
	}
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return err
	}
	t, err := resolvePath(field(req.Path), scopes)
	if err != nil {
		return err
	}
	p, err := d.writeTarget(ctx, c, t)
	if err != nil {
		return err
	}
	if p != nil {
		if _, err := p.Delete(ctx, &memsdk.DeleteRequest{Scope: t.scope, Name: t.name, Expect: providerExpect(expect)}); err != nil {
			return providerRefusal(ctx, err, t.path)
		}
		return nil
	}
	if err := d.store.remove(ctx, t.scope, t.name, expect); err != nil {
		return stateRefusal(err, t.path)
	}
	return nil
}

// GrepRequest is POST …/memory/grep's memory object.
type GrepRequest struct {
	Pattern    json.RawMessage `json:"pattern"`
	Prefix     json.RawMessage `json:"prefix"`
	IgnoreCase json.RawMessage `json:"ignore_case"`
	Limit      json.RawMessage `json:"limit"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path       string
	LineNumber int
	// Text is the line without its terminator, cut at 500 characters and then ending with "…".
	Text string
}

// GrepResult is a door grep's answer.
type GrepResult struct {
	Matches   []GrepMatch
	Truncated bool
}

// Grep searches the documents under a prefix line by line with memory_grep's rules
// (docs/agent-tools.md#memory-and-skills): the RE2 pattern,
// ignore_case, a limit of 1 to 500 (default 100) and the one-second budget across both roots.
// ignore_case that is not a boolean or a limit outside 1..500 is 400 parameter_invalid; then the
// prefix (memory_path_invalid, memory_scope_unavailable) and the pattern (memory_pattern_invalid)
// are 422, as is a search over its budget (memory_pattern_too_costly).
func (d *Doors) Grep(ctx context.Context, c Caller, req *GrepRequest) (*GrepResult, error) {
	ignoreCase := false
	if f := field(req.IgnoreCase); !f.absent() {
		b, ok := f.boolean()
		if !ok {
			return nil, invalidParameter(pathIgnoreCase, "%s must be a boolean.", pathIgnoreCase)
		}
		ignoreCase = b
	}
	limit := int64(memsdk.DefaultGrepLimit)
	if f := field(req.Limit); !f.absent() {
		n, ok := f.integer()
		if !ok || n < 1 || n > memsdk.MaxGrepLimit {
			return nil, invalidParameter(pathLimit, "%s must be an integer from 1 to %d.", pathLimit, memsdk.MaxGrepLimit)
		}
		limit = n
	}
	prefix := ""
	if f := field(req.Prefix); !f.absent() {
		p, ok := f.str()
		if !ok {
			return nil, refuse422(memsdk.CodePathInvalid, pathPrefix, "%s must be a string.", pathPrefix)
		}
		prefix = p
	}
	scopes, err := d.scopes(ctx, c)
	if err != nil {
		return nil, err
	}
	sels, err := selectPrefix(prefix, scopes, pathPrefix)
	if err != nil {
		return nil, err
	}
	pattern, ok := field(req.Pattern).str()
	if !ok {
		return nil, refuse422(memsdk.CodePatternInvalid, pathPattern, "%s must be an RE2 expression.", pathPattern)
	}
	if _, err := memsdk.CompilePattern(pattern, ignoreCase); err != nil {
		return nil, refuse422(memsdk.CodePatternInvalid, pathPattern, "%q is not an RE2 expression.", pattern)
	}
	provider := d.lazyProvider(c)
	searchCtx, cancel := context.WithTimeout(ctx, d.grepBudget)
	defer cancel()
	out := &GrepResult{Matches: []GrepMatch{}}
	for _, sel := range sels {
		p, err := provider.forName(ctx, sel.prefix)
		if err != nil {
			return nil, err
		}
		var src memsdk.Provider = d.store
		if p != nil {
			src = p
		}
		remaining := int(limit) - len(out.Matches)
		resp, err := src.Grep(searchCtx, &memsdk.GrepRequest{
			Scope: sel.scope, NamePrefix: sel.prefix, Pattern: pattern, IgnoreCase: ignoreCase, Limit: remaining,
		})
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			if errors.Is(err, memsdk.ErrPatternTooCostly) || searchCtx.Err() != nil {
				return nil, refuse422(memsdk.CodePatternTooCostly, pathPattern, "The search ran past its %s budget: narrow the pattern or the prefix.", d.grepBudget)
			}
			if p != nil {
				return nil, providerFailure(ctx, err)
			}
			return nil, err
		}
		for _, m := range resp.Matches {
			text := m.Text
			if m.Clamped {
				text += memsdk.GrepClampMark
			}
			out.Matches = append(out.Matches, GrepMatch{Path: sel.scope.Binding + "/" + m.Name, LineNumber: m.LineNumber, Text: text})
		}
		if resp.Truncated {
			out.Truncated = true
			break
		}
	}
	return out, nil
}
