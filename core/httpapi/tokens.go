package httpapi

import (
	"net/http"

	"github.com/nexuskernel/nexus/core/identity"
)

// The caller's own member tokens (docs/api.md#planes-and-tokens): mint, list, revoke by id or as
// current.
func (a *API) tokenRoutes() {
	a.handle("POST /agent_api/v1/tokens", routeOpts{}, a.createToken)
	a.handle("GET /agent_api/v1/tokens", routeOpts{}, a.listTokens)
	a.handle("DELETE /agent_api/v1/tokens/current", routeOpts{}, a.revokeCurrentToken)
	a.handle("DELETE /agent_api/v1/tokens/{public_id}", routeOpts{}, a.revokeToken)
}

// tokenInfoJSON describes a token without its value.
type tokenInfoJSON struct {
	PublicID  string  `json:"public_id"`
	Label     string  `json:"label"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt *string `json:"expires_at"`
	Current   bool    `json:"current"`
}

func tokenInfoWire(t *identity.TokenInfo) tokenInfoJSON {
	return tokenInfoJSON{PublicID: t.PublicID, Label: t.Label, CreatedAt: formatTime(t.CreatedAt), ExpiresAt: formatOptTime(t.ExpiresAt), Current: t.Current}
}

// tokenFields is the optional "token" object of the two doors that mint a member token: the
// caller's own and an agent's.
type tokenFields struct {
	Label     string  `json:"label"`
	ExpiresAt *string `json:"expires_at"`
}

// read answers the label and the expiry (Unix ms, nil for none) of t, which may be absent.
func (t *tokenFields) read() (string, *int64, error) {
	if t == nil {
		return "", nil, nil
	}
	if t.ExpiresAt == nil {
		return t.Label, nil, nil
	}
	ms, err := parseTime("token.expires_at", *t.ExpiresAt)
	if err != nil {
		return "", nil, err
	}
	return t.Label, &ms, nil
}

func (a *API) createToken(w http.ResponseWriter, r *http.Request, c *Call) error {
	// The body is optional: an empty one mints an unlabelled token that does not expire.
	var body struct {
		Token *tokenFields `json:"token"`
	}
	if _, err := decodeBody(c, wordValidation, &body); err != nil {
		return err
	}
	label, expires, err := body.Token.read()
	if err != nil {
		return err
	}
	res, err := a.deps.Directory.CreateToken(r.Context(), c.Member, &identity.CreateTokenRequest{Label: label, ExpiresAt: expires})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		Token     string        `json:"token"`
		TokenInfo tokenInfoJSON `json:"token_info"`
	}{res.Token, tokenInfoWire(&res.Info)})
	return nil
}

func (a *API) listTokens(w http.ResponseWriter, r *http.Request, c *Call) error {
	ts, err := a.deps.Directory.Tokens(r.Context(), c.Member)
	if err != nil {
		return err
	}
	out := make([]tokenInfoJSON, 0, len(ts))
	for i := range ts {
		out = append(out, tokenInfoWire(&ts[i]))
	}
	writeJSON(w, http.StatusOK, struct {
		Tokens []tokenInfoJSON `json:"tokens"`
	}{out})
	return nil
}

func (a *API) revokeCurrentToken(w http.ResponseWriter, r *http.Request, c *Call) error {
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	if err := a.deps.Directory.RevokeCurrentToken(r.Context(), c.Member); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) revokeToken(w http.ResponseWriter, r *http.Request, c *Call) error {
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	if err := a.deps.Directory.RevokeToken(r.Context(), c.Member, r.PathValue("public_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
