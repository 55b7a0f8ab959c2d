package uploads

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	_ "image/gif"  // the GIF header reader
	_ "image/jpeg" // the JPEG header reader
	_ "image/png"  // the PNG header reader
	"io"

	"github.com/nexuskernel/nexus/core/store"
)

// imageHeaderBytes is how much of an image is read for its dimensions: every header of the four
// media image types fits well inside it (a JPEG's frame header may follow large metadata).
const imageHeaderBytes = 256 << 10

// ImageSize is an image upload's width and height, read from its header once and kept on the
// upload row through q. Anything that is not a readable PNG, JPEG, GIF or WebP header gives 0, 0.
func (s *Service) ImageSize(ctx context.Context, q store.Querier, u *Upload) (int64, int64, error) {
	if u.ImageWidth > 0 && u.ImageHeight > 0 {
		return u.ImageWidth, u.ImageHeight, nil
	}
	r, err := s.Open(ctx, u, 0, min(u.ByteSize, imageHeaderBytes))
	if err != nil {
		return 0, 0, err
	}
	head, err := io.ReadAll(r)
	if err != nil {
		return 0, 0, err
	}
	w, h := imageDimensions(head)
	if w > 0 && h > 0 {
		if err := store.SetImageSize(ctx, q, u.ID, w, h); err != nil {
			return 0, 0, err
		}
		u.ImageWidth, u.ImageHeight = w, h
	}
	return w, h, nil
}

// imageDimensions reads a PNG, JPEG or GIF header with the standard library and a WebP header
// by its RIFF chunk (VP8, VP8L or VP8X).
func imageDimensions(head []byte) (int64, int64) {
	if w, h := webpDimensions(head); w > 0 {
		return w, h
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil {
		return 0, 0
	}
	return int64(cfg.Width), int64(cfg.Height)
}

func webpDimensions(b []byte) (int64, int64) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0
	}
	chunk, data := string(b[12:16]), b[20:]
	switch chunk {
	case "VP8 ": // lossy: a key frame's start code, then 14-bit width and height
		if len(data) < 10 || data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a {
			return 0, 0
		}
		return int64(binary.LittleEndian.Uint16(data[6:8]) & 0x3fff), int64(binary.LittleEndian.Uint16(data[8:10]) & 0x3fff)
	case "VP8L": // lossless: a signature byte, then 14-bit width-1 and height-1
		if len(data) < 5 || data[0] != 0x2f {
			return 0, 0
		}
		v := binary.LittleEndian.Uint32(data[1:5])
		return int64(v&0x3fff) + 1, int64((v>>14)&0x3fff) + 1
	case "VP8X": // extended: 24-bit canvas width-1 and height-1 after flags
		if len(data) < 10 {
			return 0, 0
		}
		w := uint32(data[4]) | uint32(data[5])<<8 | uint32(data[6])<<16
		h := uint32(data[7]) | uint32(data[8])<<8 | uint32(data[9])<<16
		return int64(w) + 1, int64(h) + 1
	}
	return 0, 0
}
