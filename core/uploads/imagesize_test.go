package uploads

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

func riff(chunk string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(4+8+len(data)))
	b.WriteString("WEBP")
	b.WriteString(chunk)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	for b.Len() < 40 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

func TestImageDimensions(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 9000, 3))
	var p, j, g bytes.Buffer
	_ = png.Encode(&p, img)
	_ = jpeg.Encode(&j, img, nil)
	_ = gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 7, 5), color.Palette{color.Black}), nil)
	vp8l := []byte{0x2f, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(vp8l[1:], uint32(8999)|uint32(2)<<14)
	vp8 := []byte{0, 0, 0, 0x9d, 0x01, 0x2a, 0, 0, 0, 0}
	binary.LittleEndian.PutUint16(vp8[6:], 640)
	binary.LittleEndian.PutUint16(vp8[8:], 480)
	vp8x := []byte{0, 0, 0, 0, 0x3f, 0x1f, 0, 0xff, 0x0f, 0}
	cases := []struct {
		name string
		b    []byte
		w, h int64
	}{
		{"png", p.Bytes(), 9000, 3}, {"jpeg", j.Bytes(), 9000, 3}, {"gif", g.Bytes(), 7, 5},
		{"webp lossless", riff("VP8L", vp8l), 9000, 3}, {"webp lossy", riff("VP8 ", vp8), 640, 480},
		{"webp extended", riff("VP8X", vp8x), 8000, 4096}, {"text", []byte("hello, this is not an image at all....."), 0, 0},
	}
	for _, c := range cases {
		if w, h := imageDimensions(c.b); w != c.w || h != c.h {
			t.Errorf("%s: %dx%d, want %dx%d", c.name, w, h, c.w, c.h)
		}
	}
}
