package uploads

import (
	"mime"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// Creator kinds of a descriptor's creator (docs/api.md#uploads).
const (
	CreatorUser         = store.UploadCreatorUser
	CreatorAgent        = store.UploadCreatorAgent
	CreatorRunner       = store.UploadCreatorRunner
	CreatorToolProvider = store.UploadCreatorToolProvider
)

// Creator is who staged an upload: a member (user or agent) or an executor (runner or
// tool_provider), whose uploads are captures.
type Creator struct {
	// Kind is user, agent, runner or tool_provider.
	Kind string
	// ID is the internal id of the user, agent or executor.
	ID       int64
	PublicID string
}

// MemberCreator is the creator of a member's upload.
func MemberCreator(p *identity.Principal) Creator {
	return Creator{Kind: p.Kind, ID: p.ID, PublicID: p.PublicID}
}

// ExecutorCreator is the creator of an executor's capture.
func ExecutorCreator(e *identity.Executor) Creator {
	return Creator{Kind: e.Kind, ID: e.ID, PublicID: e.PublicID}
}

// IsExecutor reports whether the creator is an executor, whose uploads are captures.
func (c Creator) IsExecutor() bool { return c.Kind == CreatorRunner || c.Kind == CreatorToolProvider }

// Upload is a complete upload: its descriptor's facts (docs/api.md#uploads) and its internal id.
type Upload struct {
	// ID is the internal row id; it never leaves the server.
	ID       int64
	PublicID string
	// Filename is the kept name (base name, no control characters, at most 255 bytes).
	Filename string
	// ContentType is the detected type with its parameters ("text/plain; charset=utf-8").
	ContentType string
	ByteSize    int64
	// SHA256 is the lowercase hex digest of the bytes; it is also the strong ETag.
	SHA256  string
	Creator Creator
	// Bound reports whether any row binds the upload; an unbound one expires.
	Bound bool
	// CreatedAt is Unix ms.
	CreatedAt int64
	// ImageWidth and ImageHeight are an image's dimensions once read (ImageSize); 0 before.
	ImageWidth, ImageHeight int64
}

// URI is the one URI the kernel resolves for the upload: nexus://uploads/<public_id>.
func (u *Upload) URI() string { return envelope.UploadURIPrefix + u.PublicID }

// ExpiresAt is when an unbound upload will be reclaimed (Unix ms); ok is false once bound.
func (u *Upload) ExpiresAt() (at int64, ok bool) {
	if u.Bound {
		return 0, false
	}
	return u.CreatedAt + UnboundLifetime.Milliseconds(), true
}

// MediaType is the detected type without parameters, lowercased: what media classification and
// attachment parts compare (docs/agent-tools.md#what-a-model-reads).
func (u *Upload) MediaType() string { return mediaTypeOf(u.ContentType) }

// mediaTypeOf is a detected type without parameters, lowercased.
func mediaTypeOf(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	return t
}

// IsMedia reports whether the upload is media (an image or a PDF a model may read as an
// attachment), by its detected type.
func (u *Upload) IsMedia() bool { return envelope.IsMediaType(u.ContentType) }

func uploadOf(r *store.Upload) *Upload {
	var id int64
	switch {
	case r.CreatorUserID.Valid:
		id = r.CreatorUserID.Int64
	case r.CreatorAgentID.Valid:
		id = r.CreatorAgentID.Int64
	case r.CreatorExecutorID.Valid:
		id = r.CreatorExecutorID.Int64
	}
	return &Upload{
		ID: r.ID, PublicID: r.PublicID, Filename: r.Filename, ContentType: r.ContentType.String,
		ByteSize: r.ByteSize, SHA256: r.SHA256.String, Bound: r.Bound, CreatedAt: r.CreatedAt,
		ImageWidth: r.ImageWidth.Int64, ImageHeight: r.ImageHeight.Int64,
		Creator: Creator{Kind: r.CreatorKind, ID: id, PublicID: r.CreatorPublicID},
	}
}

// canonicalID returns the stored (lowercase) form of a UUID-form id; ok is false for anything
// else.
func canonicalID(s string) (string, bool) {
	if !identity.IsUUID(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

// canonicalIDs keeps the UUID-form ids of ids, in the stored form, without repeats.
func canonicalIDs(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, s := range ids {
		if id, ok := canonicalID(s); ok && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
