package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The agent's standing configuration and the read-only tool assembly (docs/api.md#agent-profiles):
// the agent's own doors take an agent's member token (a user is 403 not_agent); the member door
// of one agent's profile takes its steward's or an owner's.
func (a *API) profileRoutes() {
	if a.deps.Profiles == nil {
		return
	}
	a.handle("GET /agent_api/v1/profile/configuration", routeOpts{}, a.getProfile)
	a.handle("PUT /agent_api/v1/profile/configuration", routeOpts{}, a.putProfile)
	a.handle("POST /agent_api/v1/tools/assembly", routeOpts{}, a.assembleTools)
	// The member door of one agent's profile, for its steward or an owner
	// (docs/api.md#an-agents-profile-and-tokens): the same body, validation and words.
	a.handle("GET /agent_api/v1/workspaces/{ws}/agents/{agent}/profile/configuration", routeOpts{}, a.getAgentProfile)
	a.handle("PUT /agent_api/v1/workspaces/{ws}/agents/{agent}/profile/configuration", routeOpts{}, a.putAgentProfile)
	a.handle("POST /agent_api/v1/workspaces/{ws}/agents/{agent}/tools/assembly", routeOpts{}, a.assembleAgentTools)
}

// Request fields of the two doors.
const (
	keyConfiguration = "configuration"
	keySelection     = declare.FieldDefaultRunner
)

// callingAgent is the caller as the profile service names it; a user is not_agent.
func callingAgent(c *Call) (profiles.Agent, error) {
	if c.Member.Kind != identity.KindAgent {
		return profiles.Agent{}, identity.ErrNotAgent
	}
	return profiles.Agent{ID: c.Member.ID, WorkspaceID: c.Member.WorkspaceID}, nil
}

// configurationRequest is the PUT body's root; assemblyRequest the assembly's. Both keep the
// configuration raw: its fields are checked by configurationKeys, its values by the profile
// service.
type configurationRequest struct {
	Configuration json.RawMessage `json:"configuration"`
	// Imports is the read-back's pins and problems, which the server writes: a PUT ignores
	// it, so that a read-back stores again as it is.
	Imports json.RawMessage `json:"imports"`
}

type assemblyRequest struct {
	Configuration json.RawMessage `json:"configuration"`
	DefaultRunner json.RawMessage `json:"default_runner_executor_public_id"`
}

// configurationKeys are the fields of a configuration object (docs/api.md); any
// other is refused validation_failed with the word invalid, the word of a shape outside the
// grammar.
type configurationKeys struct {
	ToolDefinitions         json.RawMessage `json:"tool_definitions"`
	KernelTools             json.RawMessage `json:"kernel_tools"`
	RunnerExecutorPublicIDs json.RawMessage `json:"runner_executor_public_ids"`
	RunnerToolNames         json.RawMessage `json:"runner_tool_names"`
	ToolProviderTools       json.RawMessage `json:"tool_provider_tools"`
	EagerToolNames          json.RawMessage `json:"eager_tool_names"`
	ApprovalMode            json.RawMessage `json:"approval_mode"`
	ApprovalRules           json.RawMessage `json:"approval_rules"`
	DefaultModel            json.RawMessage `json:"default_model"`
	Instructions            json.RawMessage `json:"instructions"`
	PinImports              json.RawMessage `json:"pin_imports"`
	Repin                   json.RawMessage `json:"repin"`
}

// wordConfiguration is the configuration's field word.
var wordConfiguration = fieldWord{kind: refusal.Unprocessable, code: refusal.CodeValidationFailed, word: declare.WordInvalid}

// bodyObject decodes the call's body as an ordered JSON object, after the one strict decoding
// into req has judged its shape and root keys. An empty body is an absent one (present false).
func bodyObject(c *Call, req any) (v jsonwire.Value, present bool, err error) {
	present, err = decodeBody(c, wordParameter, req)
	if err != nil || !present {
		return jsonwire.Value{}, present, err
	}
	v, err = jsonwire.Decode(c.Body)
	if err != nil || !v.IsObject() {
		return jsonwire.Value{}, true, errNotObject
	}
	return v, true, nil
}

// checkConfigurationKeys refuses a configuration field the door does not know.
func checkConfigurationKeys(raw json.RawMessage) error {
	_, err := decodeObjectAt(raw, keyConfiguration, wordConfiguration, &configurationKeys{})
	return err
}

// member reads one member of the body root. A root that repeats the key is malformed: 400
// parameter_invalid at the key, never a silent choice between the two values.
func member(root jsonwire.Value, key string) (jsonwire.Value, bool, error) {
	n := 0
	for _, k := range root.Keys() {
		if k == key {
			n++
		}
	}
	if n > 1 {
		return jsonwire.Value{}, true, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
			"The request body gives %q more than once.", key).With("path", key)
	}
	v, ok := root.Get(key)
	return v, ok, nil
}

func errConfigurationMissing() error {
	return refusal.New(refusal.BadRequest, refusal.CodeParameterMissing,
		`The body must carry "configuration", an object.`).With("path", keyConfiguration)
}

func (a *API) getProfile(w http.ResponseWriter, r *http.Request, c *Call) error {
	agent, err := callingAgent(c)
	if err != nil {
		return err
	}
	return a.readProfile(w, r, agent)
}

// readProfile answers the agent's profile, the GET of both profile doors.
func (a *API) readProfile(w http.ResponseWriter, r *http.Request, agent profiles.Agent) error {
	cfg, err := a.deps.Profiles.Configuration(r.Context(), agent)
	if err != nil {
		return err
	}
	return writeConfiguration(w, cfg)
}

func (a *API) putProfile(w http.ResponseWriter, r *http.Request, c *Call) error {
	agent, err := callingAgent(c)
	if err != nil {
		return err
	}
	return a.replaceProfile(w, r, c, agent)
}

// replaceProfile is the PUT of both profile doors once the caller's standing is checked: the
// body's shape and keys, then the profile service's validation, with the profile door's words.
func (a *API) replaceProfile(w http.ResponseWriter, r *http.Request, c *Call, agent profiles.Agent) error {
	var req configurationRequest
	if err := decodeRequired(c, wordParameter, keyConfiguration, errConfigurationMissing(), &req); err != nil {
		return err
	}
	root, err := jsonwire.Decode(c.Body)
	if err != nil || !root.IsObject() {
		return errNotObject
	}
	cfg, ok, err := member(root, keyConfiguration)
	if err != nil {
		return err
	}
	if !ok || !cfg.IsObject() {
		return errConfigurationMissing()
	}
	if err := checkConfigurationKeys(req.Configuration); err != nil {
		return err
	}
	out, err := a.deps.Profiles.PutConfiguration(r.Context(), agent, cfg)
	if err != nil {
		return declare.ProfileDoor.Refuse(err)
	}
	return writeConfiguration(w, out)
}

// stewardedAgent checks the caller's standing over the route's agent (its steward or an owner of
// the workspace) and names the agent as the profile service does.
func (a *API) stewardedAgent(r *http.Request, c *Call) (*identity.AgentAccess, profiles.Agent, error) {
	acc, err := a.deps.Directory.AgentAccess(r.Context(), c.Member, r.PathValue("ws"), r.PathValue("agent"))
	if err != nil {
		return nil, profiles.Agent{}, err
	}
	return acc, profiles.Agent{ID: acc.Agent.ID, WorkspaceID: acc.Workspace.ID}, nil
}

func (a *API) getAgentProfile(w http.ResponseWriter, r *http.Request, c *Call) error {
	_, agent, err := a.stewardedAgent(r, c)
	if err != nil {
		return err
	}
	return a.readProfile(w, r, agent)
}

func (a *API) putAgentProfile(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, agent, err := a.stewardedAgent(r, c)
	if err != nil {
		return err
	}
	// The standing is read again in the transaction that replaces the profile.
	agent.Guard = func(ctx context.Context, tx *store.Tx) error { return a.deps.Directory.RecheckAgent(ctx, tx, acc) }
	return a.replaceProfile(w, r, c, agent)
}

func writeConfiguration(w http.ResponseWriter, cfg *profiles.Configuration) error {
	body, err := cfg.MarshalJSON()
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(body)+len(`{"configuration":,"imports":}`)+256)
	out = append(out, `{"configuration":`...)
	out = append(out, body...)
	out = append(out, `,"imports":`...)
	out = cfg.ImportsValue().Append(out)
	out = append(out, "}\n"...)
	writeJSONBytes(w, http.StatusOK, out)
	return nil
}

func (a *API) assembleTools(w http.ResponseWriter, r *http.Request, c *Call) error {
	agent, err := callingAgent(c)
	if err != nil {
		return err
	}
	return a.assemble(w, r, c, agent)
}

// assembleAgentTools is the assembly at the member door of one agent's profile, for its steward or
// an owner: what the agent's new work would freeze (nexus agent configure --dry-run).
func (a *API) assembleAgentTools(w http.ResponseWriter, r *http.Request, c *Call) error {
	_, agent, err := a.stewardedAgent(r, c)
	if err != nil {
		return err
	}
	return a.assemble(w, r, c, agent)
}

// assemble is the assembly of both doors once the caller's standing is checked.
func (a *API) assemble(w http.ResponseWriter, r *http.Request, c *Call, agent profiles.Agent) error {
	var body assemblyRequest
	root, present, err := bodyObject(c, &body)
	if err != nil {
		return err
	}
	req := profiles.AssemblyRequest{}
	// The selector: a required key, null or a Runner public id. The server never picks one.
	sel, ok := jsonwire.Value{}, false
	if present {
		if sel, ok, err = member(root, keySelection); err != nil {
			return err
		}
	}
	if !ok {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterMissing,
			"The body must carry %q: a Runner public id, or null for none.", keySelection).With("path", keySelection)
	}
	if !sel.IsNull() {
		id, isString := sel.AsString()
		if !isString || !declare.ValidRunnerID(id) {
			return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
				"%s must be a Runner public id or null.", keySelection).With("path", keySelection)
		}
		req.Selection = id
	}
	// The configuration: absent assembles the stored profile; present, it must be an object.
	cfg, ok, err := member(root, keyConfiguration)
	if err != nil {
		return err
	}
	if ok {
		if !cfg.IsObject() {
			return errConfigurationMissing()
		}
		if err := checkConfigurationKeys(body.Configuration); err != nil {
			return err
		}
		req.Configuration = &cfg
	}
	frozen, err := a.deps.Profiles.Assemble(r.Context(), agent, req)
	if err != nil {
		return declare.AssemblyDoor.Refuse(err)
	}
	env, err := frozen.Environment.MarshalJSON()
	if err != nil {
		return err
	}
	imported, err := json.Marshal(nonNilImported(frozen.Imported))
	if err != nil {
		return err
	}
	set := frozen.ToolDefinitions.Bytes()
	out := make([]byte, 0, len(set)+len(env)+len(imported)+128)
	out = append(out, `{"tool_definitions":`...)
	out = append(out, set...)
	out = append(out, `,"environment":`...)
	out = append(out, env...)
	out = append(out, `,"imports":`...)
	out = append(out, imported...)
	out = append(out, `,"problems":`...)
	out = profiles.ProblemsValue(frozen.Problems).Append(out)
	out = append(out, "}\n"...)
	writeJSONBytes(w, http.StatusOK, out)
	return nil
}

func nonNilImported(t []declare.ImportedTool) []declare.ImportedTool {
	if t == nil {
		return []declare.ImportedTool{}
	}
	return t
}
