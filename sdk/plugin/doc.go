// Package plugin holds what every Nexus plugin and the plugin host share whatever the plugin's
// kind: the go-plugin handshake (the NEXUS_PLUGIN magic cookie and protocol major 1), the plugin
// kinds, Info and Config, the Describer contract every plugin serves, the errors that cross the
// boundary (ErrPluginShutdown, ErrConfigInvalid, ErrUnavailable) and the stderr logger.
//
// It builds on sdk/announce alone and knows nothing of a particular kind: the memory and
// tool-provider packages serve and dial their own services. It holds no process state, starts
// nothing and never imports generated protocol code into a public signature.
package plugin
