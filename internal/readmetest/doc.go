// Package readmetest keeps README.md and examples/ true: its test clones the repository at its
// HEAD commit into a temporary directory, starts the server there as the README's set-up says
// (make run), and runs the README's sh, bash and shell blocks in order in one bash, failing on
// the first block that fails; then it starts every file of examples/ (a settings file: a server
// serves with it; a runner's tool file: a runner announces it; the systemd unit of deploy/:
// systemd-analyze verify passes; the plugin module tool-plugin/: it builds and serves). It runs
// against SQLite, and against PostgreSQL too when NEXUS_TEST_POSTGRES_URL is set. The clone is
// made in an empty directory of its own, so a file read from beside the repository is missing.
//
// In the same clone it builds the container image with `make image` (podman, with a store of
// the test's own), checks its configuration, exports its file system and serves from that tree
// with the example plugin (docs/operations.md#the-container-image). Without podman or
// systemd-analyze those checks skip, unless NEXUS_TEST_REQUIRE_DEPLOY=1 (CI) makes that a
// failure.
//
// The test builds the whole module in the clone, which takes minutes, so it carries the build
// tag e2e and runs in `make test-e2e`, not in `make test`. The package has no other code.
package readmetest
