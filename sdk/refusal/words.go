package refusal

// Words both the SDK and the server answer with (docs/api.md#conventions,
// docs/api.md#the-executor-plane). They are contracts: clients, runners and plugin operators
// match on them byte for byte. core/refusal and sdk/announce refer to these constants.
const (
	// CodeValidationFailed: a well-formed request whose content breaks a rule or a bound.
	CodeValidationFailed = "validation_failed"
	// CodeParameterInvalid: a body or parameter that is not of the expected shape.
	CodeParameterInvalid = "parameter_invalid"
	// CodeParameterMissing: a required body member or parameter is absent.
	CodeParameterMissing = "parameter_missing"
	// CodeContentTooLarge: a body over its door's bound.
	CodeContentTooLarge = "content_too_large"
	// CodeNotFound: an unknown route or an object the caller may not see.
	CodeNotFound = "not_found"
	// CodeResultUnstorable: a committed result the store cannot keep; it closes the park
	// itself (docs/api.md#the-executor-plane), for the commit door and the plugin host alike.
	CodeResultUnstorable = "result_unstorable"
)
