// Package memo is a bounded memory of values by key, for answers that are cheap to compute again
// but worth not computing on every call: a full memory is emptied rather than tracked for
// recency, since refilling costs one computation per key and the keys a server meets number far
// fewer than the bound.
package memo
