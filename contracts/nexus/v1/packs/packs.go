package packs

import "embed"

// Files are the shipped packs, one NAME.json file each at the root.
//
//go:embed *.json
var Files embed.FS
