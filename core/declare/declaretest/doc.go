// Package declaretest holds the fixture kernel registry of the declaration rules' worked
// examples: eight tools with short texts, so golden files of the compiler and of projection
// do not move when the real catalog's texts are edited. It is for tests only.
package declaretest
