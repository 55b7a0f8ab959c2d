//go:build e2e

package readmetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// requireDeploy, set to 1, makes a missing podman or systemd-analyze a failure instead of a skip:
// CI installs both (Debian's podman and systemd packages) and sets it.
const requireDeploy = "NEXUS_TEST_REQUIRE_DEPLOY"

// needTool answers the path of a command the deployment checks need, or skips the test (fails it
// under NEXUS_TEST_REQUIRE_DEPLOY=1) when it is not installed.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed (Debian: apt-get install %s); .ci/run installs it", name, pkg)
	if os.Getenv(requireDeploy) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// unitBinary is the path the example unit starts nexus from.
const unitBinary = "/usr/local/bin/nexus"

// verifyUnit checks a systemd unit of examples/deploy with systemd-analyze verify. The unit starts
// /usr/local/bin/nexus, which this machine need not have: the check points it at the clone's
// built bin/nexus, and fails on any complaint, a warning included.
func verifyUnit(t *testing.T, dir, rel string) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	text, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "ExecStart="+unitBinary+" ") {
		t.Fatalf("%s: ExecStart does not start %s", rel, unitBinary)
	}
	built := strings.ReplaceAll(string(text), "ExecStart="+unitBinary+" ", "ExecStart="+filepath.Join(dir, "bin", "nexus")+" ")
	if out, err := analyzeUnit(analyze, t.TempDir(), filepath.Base(rel), built); err != nil {
		t.Fatalf("%s: %v\n%s", rel, err, out)
	}
}

// analyzeUnit writes a unit into dir and runs systemd-analyze verify on it: an error when it
// exits non-zero or says anything.
func analyzeUnit(analyze, dir, name, text string) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(analyze, "verify", "--man=no", p)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("systemd-analyze verify: %v", err)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return s, errors.New("systemd-analyze verify complained")
	}
	return "", nil
}

// TestUnitCheckCanFail: the unit check fails on a key systemd does not know and on a command that
// is not there, so its passing means something.
func TestUnitCheckCanFail(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	ok := "[Unit]\nDescription=x\n\n[Service]\nType=exec\nExecStart=/bin/sleep 1\n"
	if out, err := analyzeUnit(analyze, t.TempDir(), "ok.service", ok); err != nil {
		t.Fatalf("a plain unit fails the check: %v\n%s", err, out)
	}
	for name, text := range map[string]string{
		"unknown-key.service": ok + "Restart=on-failure\nRestartSecs=2s\n",
		"missing.service":     strings.Replace(ok, "/bin/sleep", "/nonexistent/nexus", 1),
	} {
		if _, err := analyzeUnit(analyze, t.TempDir(), name, text); err == nil {
			t.Errorf("%s passes the check", name)
		}
	}
}

// serveToolPlugin builds the example plugin module in the clone, as its README says, and serves
// its settings file: the plugin must become ready.
func serveToolPlugin(t *testing.T, dir string) {
	mod := filepath.Join(dir, "examples", "tool-plugin")
	cmd := exec.Command("go", "build", "-o", "nexus-wordcount", ".")
	cmd.Dir = mod
	cmd.Env = environ(map[string]string{"GOFLAGS": strings.TrimSpace(os.Getenv("GOFLAGS") + " -mod=readonly"), "GOWORK": "off"})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in examples/tool-plugin: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(mod, "nexus-wordcount")) })
	serveSettings(t, dir, filepath.Join("examples", "tool-plugin", "nexus.hcl"), store.SQLite)
}

// imageUser is the image's user and group, as the Dockerfile and `make image` name them.
const imageUser = "65532:65532"

// podmanConfig gives podman a store of its own in dir (the vfs driver, which needs no kernel
// overlay support inside a container) and an engine that needs neither systemd nor journald, so
// the test changes nothing of the machine's podman.
func podmanConfig(t *testing.T, dir string) map[string]string {
	t.Helper()
	storage := filepath.Join(dir, "storage.conf")
	engine := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(storage, []byte(fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "graph"), filepath.Join(dir, "run"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(engine, []byte("[engine]\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"CONTAINERS_STORAGE_CONF": storage, "CONTAINERS_CONF": engine}
}

// inspected is what the test reads of `podman image inspect`.
type inspected struct {
	Config struct {
		User        string              `json:"User"`
		Entrypoint  []string            `json:"Entrypoint"`
		Cmd         []string            `json:"Cmd"`
		Volumes     map[string]struct{} `json:"Volumes"`
		Labels      map[string]string   `json:"Labels"`
		Healthcheck *struct {
			Test []string `json:"Test"`
		} `json:"Healthcheck"`
	} `json:"Config"`
	Healthcheck *struct {
		Test []string `json:"Test"`
	} `json:"Healthcheck"`
}

// TestImage builds the container image with `make image` in the clone (podman, FROM scratch, so
// nothing is pulled), checks its configuration, exports its file system and, since containers
// cannot run everywhere tests do, starts the exported nexus from that tree with the example
// plugin beside it: /healthz answers, nexus health (the image's HEALTHCHECK) exits 0, and the
// plugin is ready.
func TestImage(t *testing.T) {
	podman := needTool(t, "podman", "podman")
	dir := clone(t)
	work := t.TempDir()
	pcfg := podmanConfig(t, work)
	env := environ(pcfg)
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	image := "localhost/nexus-readmetest:" + hex.EncodeToString(suffix[:])
	podmanDo := func(args ...string) ([]byte, error) {
		cmd := exec.Command(podman, args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}
	t.Cleanup(func() {
		// The store is the test's own: remove it whole, layers included.
		if _, err := podmanDo("system", "reset", "--force"); err != nil {
			t.Log(err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	mk := exec.CommandContext(ctx, "make", "image", "IMAGE="+image, "CONTAINER_ENGINE="+podman)
	mk.Dir, mk.Env = dir, env
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}

	version, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := git(dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := podmanDo("image", "inspect", image)
	if err != nil {
		t.Fatal(err)
	}
	var infos []inspected
	if err := json.Unmarshal(raw, &infos); err != nil || len(infos) != 1 {
		t.Fatalf("image inspect: %v\n%s", err, raw)
	}
	cfg := infos[0].Config
	labels := cfg.Labels
	rev := labels["org.opencontainers.image.revision"]
	if labels["org.opencontainers.image.version"] != strings.TrimSpace(string(version)) || len(rev) < 12 || !strings.HasPrefix(head, rev) ||
		labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("labels %v: want version %s, revision a prefix of %s, licence Apache-2.0", labels, version, head)
	}
	if cfg.User != imageUser {
		t.Errorf("user %q, want %s", cfg.User, imageUser)
	}
	command := append(append([]string(nil), cfg.Entrypoint...), cfg.Cmd...)
	if want := []string{"/usr/local/bin/nexus", "serve", "--listen", "0.0.0.0:7400", "--data-dir", "/data"}; !reflect.DeepEqual(command, want) {
		t.Errorf("command %q, want %q", command, want)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("volumes %v, want /data", cfg.Volumes)
	}
	hc := infos[0].Healthcheck
	if hc == nil {
		hc = cfg.Healthcheck
	}
	if hc == nil || !reflect.DeepEqual(hc.Test, []string{"CMD", "/usr/local/bin/nexus", "health"}) {
		t.Errorf("healthcheck %+v, want nexus health", hc)
	}

	// The file system, as `podman export` writes it.
	if _, err := podmanDo("create", "--no-healthcheck", "--name", "nexus-readmetest-"+hex.EncodeToString(suffix[:]), image); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(work, "rootfs.tar")
	if _, err := podmanDo("export", "--output", tarFile, "nexus-readmetest-"+hex.EncodeToString(suffix[:])); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(work, "rootfs")
	headers := extract(t, tarFile, rootfs)
	checkTree(t, dir, rootfs, headers)

	// The tree's own binaries: the version make build stamped, then a server with the example
	// plugin found beside nexus.
	nexusBin := filepath.Join(rootfs, "usr", "local", "bin", "nexus")
	out, err := exec.Command(nexusBin, "version").Output()
	if want := fmt.Sprintf("nexus %s (commit %s)\n", strings.TrimSpace(string(version)), rev); err != nil || string(out) != want {
		t.Errorf("nexus version from the image: %q (%v), want %q", out, err, want)
	}
	settings := filepath.Join(work, "nexus.hcl")
	if err := os.WriteFile(settings, []byte("plugin \"tools-example\" {\n  kind    = \"tool_provider\"\n  command = \"nexus-tools-example\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, data := freeAddr(t), filepath.Join(work, "data")
	srv := start(t, work, environ(map[string]string{"SSL_CERT_FILE": filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt")}),
		nexusBin, "serve", "--listen", addr, "--data-dir", data, "--config", settings)
	waitReady(t, srv, addr, readyTimeout)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Fatalf("/healthz: %d %s", resp.StatusCode, body)
	}
	health := exec.Command(nexusBin, "health", "--server", "http://"+addr)
	if out, err := health.CombinedOutput(); err != nil || string(out) != "ready\n" {
		t.Fatalf("nexus health from the image: %v %q", err, out)
	}
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		st := exec.Command(nexusBin, "plugins", "status", "--json")
		st.Env = environ(map[string]string{"NEXUS_ADDR": "http://" + addr, "NEXUS_TOKEN": strings.TrimSpace(string(tok))})
		raw, err := st.Output()
		if err != nil {
			t.Fatalf("nexus plugins status from the image: %v", err)
		}
		status := string(raw)
		if strings.Contains(status, `"name":"tools-example"`) && strings.Contains(status, `"state":"ready"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the example plugin is not ready:\n%s\n%s", status, srv.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := srv.stop(t); err != nil {
		t.Fatalf("the server did not exit 0 after SIGTERM: %v\n%s", err, srv.output())
	}
}

// extract writes the regular files and directories of an exported image into dir and answers
// every entry's header by its cleaned name.
func extract(t *testing.T, tarFile, dir string) map[string]*tar.Header {
	t.Helper()
	f, err := os.Open(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == ".." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			t.Fatalf("the image holds an entry outside its root: %q", h.Name)
		}
		headers[name] = h
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("the image holds %q of type %c: a scratch image of binaries needs none", h.Name, h.Typeflag)
		}
	}
}

// checkTree checks the exported file system: every binary of cmd/, static; the CA bundle; the
// user; /tmp writable by all with the sticky bit; /data the user's.
func checkTree(t *testing.T, dir, rootfs string, headers map[string]*tar.Header) {
	t.Helper()
	cmds, err := os.ReadDir(filepath.Join(dir, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		name := path.Join("usr/local/bin", c.Name())
		h := headers[name]
		if h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			t.Errorf("the image lacks the executable %s", name)
			continue
		}
		ef, err := elf.Open(filepath.Join(rootfs, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: make build must build it with CGO_ENABLED=0", name)
			}
		}
		ef.Close()
	}
	bundle, err := os.ReadFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	if err != nil || !x509.NewCertPool().AppendCertsFromPEM(bundle) {
		t.Errorf("no CA certificates in /etc/ssl/certs/ca-certificates.crt: %v", err)
	}
	uid, gid, _ := strings.Cut(imageUser, ":")
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), "\nnexus:x:"+uid+":"+gid+":") {
		t.Errorf("/etc/passwd does not name the user nexus (%s): %q %v", imageUser, passwd, err)
	}
	group, err := os.ReadFile(filepath.Join(rootfs, "etc", "group"))
	if err != nil || !strings.Contains(string(group), "\nnexus:x:"+gid+":") {
		t.Errorf("/etc/group does not name the group nexus: %q %v", group, err)
	}
	if h := headers["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp: %+v, want a directory of mode 1777", h)
	}
	if h := headers["data"]; h == nil || h.Typeflag != tar.TypeDir || fmt.Sprint(h.Uid)+":"+fmt.Sprint(h.Gid) != imageUser || h.Mode&0o700 != 0o700 {
		t.Errorf("/data: %+v, want a directory the user %s owns", h, imageUser)
	}
}
