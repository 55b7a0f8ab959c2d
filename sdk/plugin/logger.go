package plugin

import (
	"os"

	"github.com/hashicorp/go-hclog"
)

// stderr is the process's own standard error, taken before go-plugin's Serve replaces
// os.Stderr with a pipe it forwards over gRPC: the host parses only the real stderr's lines as
// logs, so a logger made after Serve started must still write there.
var stderr = os.Stderr

// Logger returns an hclog logger writing JSON to the process's stderr. The host parses those
// lines and re-logs them with their level under plugin.<catalog name>; stdout is reserved for
// go-plugin's handshake line and must never be written to.
func Logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Level:      hclog.Trace,
		Output:     stderr,
		JSONFormat: true,
	})
}
