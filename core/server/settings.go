package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/plugins"
)

// Settings are the server's resolved settings.
type Settings struct {
	// Listen is the HTTP address.
	Listen string
	// DataDir holds the SQLite database (by default) and admin.token.
	DataDir string
	// DatabaseURL selects the store: a postgres:// URL, or a SQLite path. Empty means
	// <DataDir>/nexus.db.
	DatabaseURL string
	// ConfigFile is the HCL file the settings were read from, if any.
	ConfigFile string
	// PluginDirs are searched for plugin binaries first: the --plugin-dir flags, else
	// NEXUS_PLUGIN_DIR.
	PluginDirs []string
	// FilePluginDirs are the file's plugin_dirs, searched after PluginDirs
	// (docs/plugins.md#the-plugin-block).
	FilePluginDirs []string
	// LogLevel is trace, debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
	// TLSCertFile and TLSKeyFile, both set, make the listener serve TLS with that key pair,
	// read again on SIGHUP (docs/operations.md#tls).
	TLSCertFile, TLSKeyFile string
	// Models is the models catalog configuration from the file; nil means the built-in catalog.
	Models *model.Config
	// Kernel is the kernel block; nil means the engine's defaults.
	Kernel *KernelSettings
	// Plugins is the plugin catalog from the file's plugin blocks; nil runs no plugin.
	Plugins *plugins.Catalog
	// file is the settings file's layer as Resolve read it, which a reload compares with the
	// file as it reads it then (notApplied); the zero Layer without a file.
	file Layer
}

// Defaults of the settings (issue text and README).
const (
	DefaultListen    = "127.0.0.1:7400"
	DefaultDataDir   = "./nexus-data"
	DefaultLogLevel  = "info"
	DefaultLogFormat = "text"
	// DatabaseFile is the SQLite file inside the data directory.
	DatabaseFile = "nexus.db"
)

// Environment variables, one per setting.
const (
	EnvListen      = "NEXUS_LISTEN"
	EnvDataDir     = "NEXUS_DATA_DIR"
	EnvDatabaseURL = "NEXUS_DATABASE_URL"
	EnvConfig      = "NEXUS_CONFIG"
	// EnvPluginDir holds one or more directories separated by the OS path-list separator.
	EnvPluginDir = "NEXUS_PLUGIN_DIR"
	EnvLogLevel  = "NEXUS_LOG_LEVEL"
	EnvLogFormat = "NEXUS_LOG_FORMAT"
)

// Layer is one source of settings; a nil field (or nil slice) leaves the value below it.
type Layer struct {
	Listen      *string
	DataDir     *string
	DatabaseURL *string
	PluginDirs  []string
	// FilePluginDirs is the file's plugin_dirs; only the file layer sets it.
	FilePluginDirs []string
	// ConfigFile is the file the layer was read from; only the file layer sets it.
	ConfigFile *string
	LogLevel   *string
	LogFormat  *string
	Models     *model.Config
	Kernel     *KernelSettings
	// Plugins comes from the file only: flags and variables never override plugin blocks.
	Plugins *plugins.Catalog
	// TLSCertFile and TLSKeyFile name the listener's key pair.
	TLSCertFile, TLSKeyFile *string
}

// Resolve applies layers over the defaults, later layers winning: call it with the file, then the
// environment, then the flags, which gives flag > env > file > default.
func Resolve(layers ...Layer) (Settings, error) {
	s := Settings{Listen: DefaultListen, DataDir: DefaultDataDir, LogLevel: DefaultLogLevel, LogFormat: DefaultLogFormat}
	for _, l := range layers {
		set(&s.Listen, l.Listen)
		set(&s.DataDir, l.DataDir)
		set(&s.DatabaseURL, l.DatabaseURL)
		set(&s.ConfigFile, l.ConfigFile)
		set(&s.LogLevel, l.LogLevel)
		set(&s.LogFormat, l.LogFormat)
		set(&s.TLSCertFile, l.TLSCertFile)
		set(&s.TLSKeyFile, l.TLSKeyFile)
		if l.PluginDirs != nil {
			s.PluginDirs = l.PluginDirs
		}
		if l.FilePluginDirs != nil {
			s.FilePluginDirs = l.FilePluginDirs
		}
		if l.Models != nil {
			s.Models = l.Models
		}
		if l.Kernel != nil {
			s.Kernel = l.Kernel
		}
		if l.Plugins != nil {
			s.Plugins = l.Plugins
		}
		if l.ConfigFile != nil {
			s.file = l
		}
	}
	return s, s.validate()
}

func set(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func (s Settings) validate() error {
	var errs []error
	if s.Listen == "" {
		errs = append(errs, errors.New("listen is empty"))
	}
	if s.DataDir == "" {
		errs = append(errs, errors.New("data_dir is empty"))
	}
	if hclog.LevelFromString(s.LogLevel) == hclog.NoLevel {
		errs = append(errs, fmt.Errorf("log_level %q is not one of trace, debug, info, warn, error", s.LogLevel))
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log_format %q is not text or json", s.LogFormat))
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("%s and %s go together: set both, or neither", SettingTLSCertFile, SettingTLSKeyFile))
	}
	return errors.Join(errs...)
}

// Database returns the database URL, defaulting to SQLite in the data directory.
func (s Settings) Database() string {
	if s.DatabaseURL != "" {
		return s.DatabaseURL
	}
	return filepath.Join(s.DataDir, DatabaseFile)
}

// EnvLayer reads the NEXUS_* variables through getenv.
func EnvLayer(getenv func(string) string) Layer {
	var l Layer
	str := func(name string) *string {
		if v := getenv(name); v != "" {
			return &v
		}
		return nil
	}
	l.Listen = str(EnvListen)
	l.DataDir = str(EnvDataDir)
	l.DatabaseURL = str(EnvDatabaseURL)
	l.LogLevel = str(EnvLogLevel)
	l.LogFormat = str(EnvLogFormat)
	l.TLSCertFile = str(EnvTLSCertFile)
	l.TLSKeyFile = str(EnvTLSKeyFile)
	if v := getenv(EnvPluginDir); v != "" {
		l.PluginDirs = filepath.SplitList(v)
	}
	return l
}

// fileSettings is the HCL schema of the server settings file. The rest of the body goes to the
// readers of other parts (the models catalog first); whatever none of them reads is refused.
type fileSettings struct {
	Listen      *string  `hcl:"listen,optional"`
	DataDir     *string  `hcl:"data_dir,optional"`
	DatabaseURL *string  `hcl:"database_url,optional"`
	PluginDirs  []string `hcl:"plugin_dirs,optional"`
	LogLevel    *string  `hcl:"log_level,optional"`
	LogFormat   *string  `hcl:"log_format,optional"`
	TLSCertFile *string  `hcl:"tls_cert_file,optional"`
	TLSKeyFile  *string  `hcl:"tls_key_file,optional"`
	Remain      hcl.Body `hcl:",remain"`
}

// FileLayer reads an HCL settings file with the process environment for env("NAME").
func FileLayer(path string) (Layer, error) { return FileLayerEnv(path, os.Getenv) }

// FileLayerEnv reads an HCL settings file; env("NAME") (a model provider's credentials) reads
// through getenv. A relative data_dir, plugin directory or TLS file in the file is taken relative
// to the file's own directory, so a file means the same wherever it is run from.
func FileLayerEnv(path string, getenv func(string) string) (Layer, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Layer{}, fmt.Errorf("config: %w", err)
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return Layer{}, fmt.Errorf("config: %s", diagText(diags))
	}
	var fs fileSettings
	if diags := gohcl.DecodeBody(f.Body, nil, &fs); diags.HasErrors() {
		return Layer{}, fmt.Errorf("config: %s", diagText(diags))
	}
	models, rest, diags := model.DecodeConfig(fs.Remain, getenv)
	if diags.HasErrors() {
		return Layer{}, fmt.Errorf("config: %s", diagText(diags))
	}
	kernel, rest, err := decodeKernel(rest)
	if err != nil {
		return Layer{}, fmt.Errorf("config: %s", err)
	}
	fileDir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return Layer{}, fmt.Errorf("config: %w", err)
	}
	catalog, rest, diags := plugins.DecodeCatalog(rest, fileDir)
	if diags.HasErrors() {
		return Layer{}, fmt.Errorf("config: %s", diagText(diags))
	}
	// Anything no reader took is an unknown setting.
	if diags := gohcl.DecodeBody(rest, nil, &struct{}{}); diags.HasErrors() {
		return Layer{}, fmt.Errorf("config: %s", diagText(diags))
	}
	base := filepath.Dir(path)
	abs := func(p *string) *string {
		if p == nil || *p == "" || filepath.IsAbs(*p) {
			return p
		}
		v := filepath.Join(base, *p)
		return &v
	}
	l := Layer{
		ConfigFile: &path,
		Listen:     fs.Listen, DataDir: abs(fs.DataDir), DatabaseURL: fs.DatabaseURL,
		LogLevel: fs.LogLevel, LogFormat: fs.LogFormat, Models: models, Kernel: kernel,
		TLSCertFile: abs(fs.TLSCertFile), TLSKeyFile: abs(fs.TLSKeyFile),
	}
	if catalog != nil && len(catalog.Entries) > 0 {
		l.Plugins = catalog
	}
	if fs.PluginDirs != nil {
		l.FilePluginDirs = make([]string, len(fs.PluginDirs))
		for i, d := range fs.PluginDirs {
			l.FilePluginDirs[i] = *abs(&d)
		}
	}
	return l, nil
}

func diagText(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		parts = append(parts, d.Error())
	}
	return strings.Join(parts, "; ")
}

// NewLogger builds the server's logger from the settings.
func NewLogger(s Settings, out *os.File) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "nexus",
		Level:      hclog.LevelFromString(s.LogLevel),
		JSONFormat: s.LogFormat == "json",
		Output:     out,
	})
}
