package announce

import "github.com/nexuskernel/nexus/sdk/refusal"

// status is the HTTP status the announcement door answers with r's kind.
func status(r *refusal.Refusal) int {
	switch r.Kind {
	case refusal.BadRequest:
		return 400
	case refusal.TooLarge:
		return 413
	case refusal.Unprocessable:
		return 422
	default:
		return 500
	}
}

// pathOf and nameOf are the first failure's path and name, as the body carries them.
func pathOf(r *refusal.Refusal) string { s, _ := extra(r, keyRefusalPath); return s }
func nameOf(r *refusal.Refusal) string { s, _ := extra(r, keyRefusalName); return s }

func extra(r *refusal.Refusal, key string) (string, bool) {
	v, ok := r.Get(key)
	s, _ := v.(string)
	return s, ok
}
