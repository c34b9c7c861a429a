package recompute

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// Encodings reported in Stats.Encoding.
const (
	EncodingUTF8        = "utf-8"
	EncodingLatin1      = "iso-8859-1"
	EncodingWindows1252 = "windows-1252"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

const sniffPrefix = 64 * 1024

// scanResult is pass 1: bytes, hash, lines, encoding.
type scanResult struct {
	bytes    int64
	sha256   string
	lines    int64
	encoding string
	bom      bool
	prefix   []byte // first bytes (BOM included), for sniffing
}

func scanFile(path string) (*scanResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	res := &scanResult{}
	buf := make([]byte, 256*1024)
	var carry []byte // incomplete UTF-8 sequence at a chunk boundary
	valid := true
	c1 := false // any byte in 0x80..0x9F
	var last byte
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			h.Write(chunk)
			if len(res.prefix) < sniffPrefix {
				take := min(sniffPrefix-len(res.prefix), n)
				res.prefix = append(res.prefix, chunk[:take]...)
			}
			res.bytes += int64(n)
			res.lines += int64(bytes.Count(chunk, []byte{'\n'}))
			last = chunk[n-1]
			for _, b := range chunk {
				if b >= 0x80 && b <= 0x9F {
					c1 = true
					break
				}
			}
			if valid {
				data := chunk
				if len(carry) > 0 {
					data = append(append([]byte{}, carry...), chunk...)
					carry = nil
				}
				// Keep back a trailing incomplete rune for the next chunk.
				cut := len(data)
				for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
					if utf8.RuneStart(data[i]) {
						if !utf8.FullRune(data[i:]) {
							cut = i
						}
						break
					}
				}
				if !utf8.Valid(data[:cut]) {
					valid = false
				}
				carry = append(carry, data[cut:]...)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	if len(carry) > 0 {
		valid = false
	}
	if res.bytes > 0 && last != '\n' {
		res.lines++
	}
	res.sha256 = hex.EncodeToString(h.Sum(nil))
	if bytes.HasPrefix(res.prefix, []byte{0xFF, 0xFE}) || bytes.HasPrefix(res.prefix, []byte{0xFE, 0xFF}) {
		return nil, errors.New("recompute: file starts with a UTF-16 byte-order mark; UTF-16 is not supported (convert to UTF-8)")
	}
	res.bom = bytes.HasPrefix(res.prefix, utf8BOM)
	switch {
	case valid:
		res.encoding = EncodingUTF8
	case c1:
		res.encoding = EncodingWindows1252
	default:
		res.encoding = EncodingLatin1
	}
	if res.bom && res.encoding != EncodingUTF8 {
		return nil, fmt.Errorf("recompute: file has a UTF-8 BOM but is not valid UTF-8")
	}
	return res, nil
}

// Delimiters considered by SniffDelimiter, in tie-break order.
var Delimiters = []rune{',', ';', '\t', '|'}

// SniffDelimiter picks the delimiter of the first record of data (a UTF-8
// BOM is ignored) by counting candidates outside double quotes. The most
// frequent wins; ties go to the earlier candidate; none found → ','.
func SniffDelimiter(data []byte) rune {
	data = bytes.TrimPrefix(data, utf8BOM)
	counts := map[byte]int{}
	inQuotes := false
loop:
	for _, b := range data {
		switch {
		case b == '"':
			inQuotes = !inQuotes
		case inQuotes:
		case b == '\n' || b == '\r':
			break loop
		case b == ',' || b == ';' || b == '\t' || b == '|':
			counts[b]++
		}
	}
	best, bestN := ',', 0
	for _, d := range Delimiters {
		if n := counts[byte(d)]; n > bestN {
			best, bestN = d, n
		}
	}
	return best
}
