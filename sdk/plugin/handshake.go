package plugin

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Protocol constants. The protocol version is also written in the header of
// contracts/proto/nexus/plugin/v1/plugin.proto; a test fails when the two disagree.
const (
	// MagicCookieKey names the environment variable the host sets for its plugins.
	MagicCookieKey = "NEXUS_PLUGIN"
	// MagicCookieValue is the cookie's value: a UX guard that stops a plugin binary run by hand
	// from waiting for a handshake, not a security feature.
	MagicCookieValue = "c5b2f0a19e7d4c38b6e14a2d9f07c3e8"
	// ProtocolMajor is negotiated by go-plugin's VersionedPlugins: a breaking change is a new
	// major served beside this one.
	ProtocolMajor = 1
	// ProtocolMinor is reported in Describe; minors add fields and RPCs only.
	ProtocolMinor = 3
)

// Handshake is shared by the host and every plugin.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolMajor,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Kind is what a plugin binary serves; one binary serves exactly one kind.
type Kind string

const (
	// KindMemory stores the memory family for workspaces that opt in.
	KindMemory Kind = announce.PluginKindMemory
	// KindToolProvider serves tools a third party ships.
	KindToolProvider Kind = announce.PluginKindToolProvider
)

// Valid reports whether k is one of the two kinds.
func (k Kind) Valid() bool { return k == KindMemory || k == KindToolProvider }

// PluginSetKey is the name under which a kind's go-plugin adapter sits in a plugin set: the
// kind's own word, so the host dispenses the catalog kind by name.
func (k Kind) PluginSetKey() string { return string(k) }
