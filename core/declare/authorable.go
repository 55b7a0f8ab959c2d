package declare

// Authoring describes work authored inside an existing execution
// (docs/agent-tools.md#declaring-tools): it inherits the execution's frozen context and may only
// narrow it by callable name.
type Authoring struct {
	// ModelAuthored: a model authored the work (a child model operation).
	ModelAuthored bool
	// ImportFields: the request carries kernel_tools, runner_executor_public_ids or
	// runner_tool_names.
	ImportFields bool
	// InheritsEnvironment: an environment is already inherited.
	InheritsEnvironment bool
	// ToolStepModelDefaults: a child tool step carries model_defaults.
	ToolStepModelDefaults bool
	// ModelWork: the work is a model operation.
	ModelWork bool
	// InheritedModel: the inherited context has a model.
	InheritedModel bool
}

// CheckAuthorable refuses context_not_authorable when work authored inside an execution tries
// to author context it can only inherit; field names the offending request field.
func CheckAuthorable(a Authoring, field string) error {
	var why string
	switch {
	case a.ModelAuthored && a.ModelWork && a.ImportFields:
		why = "a child model operation inherits its tools and may only narrow them by name"
	case a.InheritsEnvironment && a.ImportFields:
		why = "the environment is inherited; import fields cannot change it"
	case a.ToolStepModelDefaults:
		why = "a child tool step inherits its model context and carries no model_defaults"
	case a.ModelWork && !a.InheritedModel:
		why = "the inherited context has no model"
	default:
		return nil
	}
	return FieldRefusal(WordContextNotAuthorable, field, "", why)
}
