// Package profilestest fills the store for tests that need Runners and announcements: it
// creates executors with chosen public ids and stores announcements through the same parse and
// repository calls the announcement door makes, so that acceptance tests read what a real
// Runner would have announced. It is for tests only and holds no state.
package profilestest
