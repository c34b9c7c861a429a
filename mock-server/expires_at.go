package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The renew body's expiresAt is a pydantic `datetime` in lax mode (checked
// against opensandbox-server 1.1.1 and its pydantic 2.14 / pydantic-core
// 2.50): besides RFC 3339 text it takes a JSON number, or a string holding
// one, as a Unix timestamp — in seconds, or in milliseconds when its size is
// above 2e10. So {"expiresAt":12} is 1970-01-01T00:00:12Z, valid input that
// the handler then refuses as not in the future (400), while a future
// timestamp renews (200). A timestamp outside years 1..9999, an integer no
// int64 holds, and a value of another JSON type are 422s.
const (
	msWatershed = 2e10         // above this (in absolute value) a timestamp is in milliseconds
	maxUnixSec  = 253402300799 // 9999-12-31T23:59:59Z
	minUnixSec  = -62135596800 // 0001-01-01T00:00:00Z
	year0Sec    = -62167219200 // 0000-01-01T00:00:00Z
	afterMsg    = "dates after 9999 are not supported as unix timestamps"
	beforeMsg   = "dates before 0000 are not supported as unix timestamps"
	year0Msg    = "year 0 is out of range"
	expiresType = "Input should be a valid datetime"
)

// numericString is what pydantic reads as a timestamp inside a string:
// digits with an optional sign and fraction ("12", "-1", "+12", "12.", ".5").
var numericString = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)

// parseExpiresAt reads the renew body's expiresAt like the real server's
// model does; a non-nil item is the 422 to answer.
func parseExpiresAt(raw json.RawMessage) (time.Time, *validationItem) {
	loc := []any{"body", "expiresAt"}
	input := rawValue(raw)
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			break
		}
		if numericString.MatchString(s) {
			if t, msg := unixTimestamp(s, false); msg == "" {
				return t, nil
			} else {
				it := vParse("datetime_from_date_parsing", "Input should be a valid datetime or date, ", loc, input, msg)
				return time.Time{}, &it
			}
		}
		if t, ok := parseRFC3339(s); ok {
			return t, nil
		}
		it := vParse("datetime_from_date_parsing", "Input should be a valid datetime or date, ", loc, input, "invalid character in year")
		return time.Time{}, &it
	case len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')):
		isInt := !bytes.ContainsAny(raw, ".eE")
		t, msg := unixTimestamp(string(raw), isInt)
		switch {
		case msg == "":
			return t, nil
		case msg != expiresType:
			it := vParse("datetime_parsing", "Input should be a valid datetime, ", loc, input, msg)
			return time.Time{}, &it
		}
	}
	// null, true/false, an array or an object.
	it := vType("datetime_type", loc, input, expiresType)
	return time.Time{}, &it
}

func vParse(typ, prefix string, loc []any, input any, msg string) validationItem {
	return validationItem{Type: typ, Loc: loc, Msg: prefix + msg, Input: input, Ctx: map[string]any{"error": msg}}
}

// unixTimestamp converts a number's text to a UTC time, rounded to the
// microsecond, or returns pydantic's reason it cannot (expiresType: no
// timestamp at all, an integer literal beyond int64).
func unixTimestamp(text string, isInt bool) (time.Time, string) {
	var sec int64
	var micros int64
	if isInt {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return time.Time{}, expiresType
		}
		if n > msWatershed || n < -msWatershed {
			sec, micros = floorDiv(n, 1000), (n-floorDiv(n, 1000)*1000)*1000
		} else {
			sec = n
		}
	} else {
		f, err := strconv.ParseFloat(strings.TrimPrefix(text, "+"), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) { // 1e400 is +Inf, as in Python
			return time.Time{}, expiresType
		}
		if math.Abs(f) > msWatershed {
			f /= 1000
		}
		switch {
		case math.IsNaN(f):
			return time.Time{}, expiresType
		case f >= maxUnixSec+1:
			return time.Time{}, afterMsg
		case f < year0Sec:
			return time.Time{}, beforeMsg
		}
		whole := math.Floor(f)
		sec, micros = int64(whole), int64(math.Round((f-whole)*1e6))
	}
	switch {
	case sec > maxUnixSec:
		return time.Time{}, afterMsg
	case sec < year0Sec:
		return time.Time{}, beforeMsg
	case sec < minUnixSec:
		return time.Time{}, year0Msg
	}
	return time.Unix(sec, micros*1000).UTC(), ""
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
