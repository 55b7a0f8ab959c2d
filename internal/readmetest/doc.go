// Package readmetest keeps README.md and examples/ true: its test clones the repository at its
// HEAD commit into a temporary directory, starts the server there as the README's set-up says
// (make run), and runs the README's sh, bash and shell blocks in order in one bash, failing on
// the first block that fails; then it starts every file of examples/ (a settings file: a server
// serves with it; a runner's tool file: a runner announces it). It runs against SQLite, and
// against PostgreSQL too when NEXUS_TEST_POSTGRES_URL is set.
//
// The test builds the whole module in the clone, which takes minutes, so it carries the build
// tag e2e and runs in `make test-e2e`, not in `make test`. The package has no other code.
package readmetest
