package memory

import (
	"crypto/rand"
	"fmt"
)

// NewID answers a fresh document id (Entry.ID, protocol 1.3): a random UUID (version 4) in
// canonical lowercase form, the shape the member doors accept as expected_public_id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics on a broken system source)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
