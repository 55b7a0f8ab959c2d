package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// The member memory doors (docs/api.md#memory): kernel memory, or the memory plugin a
// workspace's override names. They need Deps.Memory; without it they
// are not served.
func (a *API) memoryRoutes() {
	if a.deps.Memory == nil {
		return
	}
	a.handle("GET /agent_api/v1/workspaces/{ws}/memory", routeOpts{}, a.memoryList)
	a.handle("POST /agent_api/v1/workspaces/{ws}/memory/show", routeOpts{}, a.memoryShow)
	a.handle("POST /agent_api/v1/workspaces/{ws}/memory/write", routeOpts{}, a.memoryWrite)
	a.handle("POST /agent_api/v1/workspaces/{ws}/memory/edit", routeOpts{}, a.memoryEdit)
	a.handle("POST /agent_api/v1/workspaces/{ws}/memory/grep", routeOpts{}, a.memoryGrep)
	a.handle("POST /agent_api/v1/workspaces/{ws}/memory/delete", routeOpts{}, a.memoryDelete)
}

// memoryCaller checks the caller's standing in the workspace. Reads need read standing and writes
// write standing; in a workspace both are membership (docs/api.md#conventions), so one check serves
// every door, answering 404 not_found for a workspace the caller is not in.
func (a *API) memoryCaller(r *http.Request, c *Call) (memory.Caller, error) {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedMember)
	if err != nil {
		return memory.Caller{}, err
	}
	return memory.Caller{
		WorkspaceID:       acc.Workspace.ID,
		WorkspacePublicID: acc.Workspace.PublicID,
		Principal:         memory.Principal{Kind: c.Member.Kind, PublicID: c.Member.PublicID},
	}, nil
}

// decodeMemory reads a door body {"memory": {…}} into dst: an absent or null memory is 400
// parameter_missing, one that is not an object 400 parameter_invalid, and a key that neither the
// body nor dst knows 400 parameter_invalid at its path. Field rules are the doors' own.
func decodeMemory(c *Call, dst any) error {
	var body struct {
		Memory json.RawMessage `json:"memory"`
	}
	if err := decodeRequired(c, wordMemory, "memory", nil, &body); err != nil {
		return err
	}
	raw := bytes.TrimSpace(body.Memory)
	isObject, err := decodeObjectAt(raw, "memory", wordMemory, dst)
	if err != nil {
		return err
	}
	if !isObject {
		return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "memory must be a JSON object.").With("path", "memory")
	}
	return nil
}

// memoryDocumentJSON is a document on the wire; content only on show, public_id null for a
// document a memory provider holds.
type memoryDocumentJSON struct {
	Path        string  `json:"path"`
	PublicID    *string `json:"public_id"`
	LockVersion int64   `json:"lock_version"`
	Bytesize    int64   `json:"bytesize"`
	Description *string `json:"description"`
	WrittenAt   string  `json:"written_at"`
	Content     *string `json:"content,omitempty"`
}

func memoryDocumentWire(d *memory.Document) memoryDocumentJSON {
	var id *string
	if d.PublicID != "" {
		id = &d.PublicID
	}
	return memoryDocumentJSON{
		Path: d.Path, PublicID: id, LockVersion: d.LockVersion, Bytesize: d.Bytesize,
		Description: d.Description, WrittenAt: d.WrittenAt.UTC().Format(store.TimeLayout), Content: d.Content,
	}
}

type memoryBody struct {
	Memory memoryDocumentJSON `json:"memory"`
}

func (a *API) memoryList(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	docs, err := a.deps.Memory.List(r.Context(), caller, r.URL.Query().Get("prefix"))
	if err != nil {
		return err
	}
	out := make([]memoryDocumentJSON, len(docs))
	for i := range docs {
		out[i] = memoryDocumentWire(&docs[i])
	}
	writeJSON(w, http.StatusOK, struct {
		Memory []memoryDocumentJSON `json:"memory"`
	}{out})
	return nil
}

func (a *API) memoryShow(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	var req memory.ShowRequest
	if err := decodeMemory(c, &req); err != nil {
		return err
	}
	doc, err := a.deps.Memory.Show(r.Context(), caller, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoryBody{memoryDocumentWire(doc)})
	return nil
}

func (a *API) memoryWrite(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	var req memory.WriteRequest
	if err := decodeMemory(c, &req); err != nil {
		return err
	}
	doc, created, err := a.deps.Memory.Write(r.Context(), caller, &req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, memoryBody{memoryDocumentWire(doc)})
	return nil
}

func (a *API) memoryEdit(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	var req memory.EditRequest
	if err := decodeMemory(c, &req); err != nil {
		return err
	}
	doc, err := a.deps.Memory.Edit(r.Context(), caller, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoryBody{memoryDocumentWire(doc)})
	return nil
}

type memoryMatchJSON struct {
	Path       string `json:"path"`
	LineNumber int    `json:"line_number"`
	Text       string `json:"text"`
}

func (a *API) memoryGrep(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	var req memory.GrepRequest
	if err := decodeMemory(c, &req); err != nil {
		return err
	}
	res, err := a.deps.Memory.Grep(r.Context(), caller, &req)
	if err != nil {
		return err
	}
	matches := make([]memoryMatchJSON, len(res.Matches))
	for i, m := range res.Matches {
		matches[i] = memoryMatchJSON{Path: m.Path, LineNumber: m.LineNumber, Text: m.Text}
	}
	writeJSON(w, http.StatusOK, struct {
		Matches   []memoryMatchJSON `json:"matches"`
		Truncated bool              `json:"truncated"`
	}{matches, res.Truncated})
	return nil
}

func (a *API) memoryDelete(w http.ResponseWriter, r *http.Request, c *Call) error {
	caller, err := a.memoryCaller(r, c)
	if err != nil {
		return err
	}
	var req memory.DeleteRequest
	if err := decodeMemory(c, &req); err != nil {
		return err
	}
	if err := a.deps.Memory.Delete(r.Context(), caller, &req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
