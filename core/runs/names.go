package runs

import "github.com/nexuskernel/nexus/sdk/announce"

// announceLookup is the wire spelling of a kernel name given in either spelling.
func announceLookup(name string) (string, bool) {
	k, ok := announce.LookupKernelName(name)
	return k.Wire, ok
}
