package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonbText is v as JSON in the exact text PostgreSQL prints for a jsonb
// value: object keys ordered by length, then bytes; ", " and ": " between
// items; strings escaped as jsonb escapes them (only '"', '\', and the
// control characters; <, >, & and non-ASCII as they are).
//
// public_events.data is text written in this form rather than jsonb: the
// server then stores the projector's bytes instead of parsing ~700 bytes
// of JSON per public event (a fifth of the subscriber backend's work in a
// replay), and the rows written as jsonb before migration 00016, converted
// with data::text, are byte for byte what a replay writes now (audit
// verify, rebuild). Readers see what they saw before.
func jsonbText(v any) (string, error) {
	var b strings.Builder
	err := appendJSONB(&b, v)
	return b.String(), err
}

// jsonbRewrite is jsonbText the old way, which appendJSONB falls back to
// for what it does not encode itself: encoding/json writes compact, valid
// JSON, rewritten in one pass over its bytes, without decoding it into
// maps (which cost as much as the parse it saves the server).
func jsonbRewrite(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(raw) + len(raw)/4)
	err = rewrite(&b, raw)
	return b.String(), err
}

// writeJSONB rewrites the value at the start of compact JSON src and
// returns what follows it.
func writeJSONB(b *strings.Builder, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return nil, errors.New("jsonb text: unexpected end")
	}
	switch c := src[0]; {
	case c == '{':
		return writeObject(b, src)
	case c == '[':
		src = src[1:]
		b.WriteByte('[')
		for i := 0; len(src) > 0 && src[0] != ']'; i++ {
			if i > 0 {
				if src[0] != ',' {
					return nil, errors.New("jsonb text: expected ,")
				}
				src = src[1:]
				b.WriteString(", ")
			}
			var err error
			if src, err = writeJSONB(b, src); err != nil {
				return nil, err
			}
		}
		if len(src) == 0 {
			return nil, errors.New("jsonb text: unterminated array")
		}
		b.WriteByte(']')
		return src[1:], nil
	case c == '"':
		str, rest, err := readString(src)
		if err != nil {
			return nil, err
		}
		writeJSONBString(b, str)
		return rest, nil
	default: // a number, true, false or null
		n := 0
		for n < len(src) && src[n] != ',' && src[n] != ']' && src[n] != '}' {
			n++
		}
		lit := string(src[:n])
		if lit != "true" && lit != "false" && lit != "null" && !plainNumber(lit) {
			return nil, fmt.Errorf("jsonb text: number %s has no single form", lit)
		}
		b.WriteString(lit)
		return src[n:], nil
	}
}

// plainNumber says whether jsonb prints the number as written: digits,
// with a fraction or not, no exponent, no negative zero (the views hold
// integers only; a float's exponent would print otherwise).
func plainNumber(lit string) bool {
	if strings.HasPrefix(lit, "-") && strings.Trim(lit, "-0.") == "" {
		return false // a negative zero prints as 0
	}
	lit = strings.TrimPrefix(lit, "-")
	whole, frac, hasFrac := strings.Cut(lit, ".")
	digits := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789") == ""
	}
	return digits(whole) && (len(whole) == 1 || whole[0] != '0') && (!hasFrac || digits(frac))
}

// writeObject writes an object with its keys ordered as jsonb orders them:
// by length, then bytes.
func writeObject(b *strings.Builder, src []byte) ([]byte, error) {
	var room [32]member // most objects: no allocation
	members := room[:0]
	src = src[1:]
	for len(src) > 0 && src[0] != '}' {
		if len(members) > 0 {
			if src[0] != ',' {
				return nil, errors.New("jsonb text: expected ,")
			}
			src = src[1:]
		}
		key, rest, err := readString(src)
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 || rest[0] != ':' {
			return nil, errors.New("jsonb text: expected :")
		}
		value := rest[1:]
		end, err := skipValue(value)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key, value[:end]})
		src = value[end:]
	}
	if len(src) == 0 {
		return nil, errors.New("jsonb text: unterminated object")
	}
	sortMembers(members)
	b.WriteByte('{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(m.key, members[i+1].key) {
			continue // jsonb keeps the last of equal keys (the sort is stable)
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		writeJSONBString(b, m.key)
		b.WriteString(": ")
		if _, err := writeJSONB(b, m.value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return src[1:], nil
}

type member struct {
	key, value []byte
}

// sortMembers orders members by length, then bytes (an insertion sort:
// objects are small, and a view's fields come in the same order each
// time, so the sort does the same few moves).
func sortMembers(m []member) {
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && keyLess(m[j].key, m[j-1].key); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

func keyLess(a, c []byte) bool {
	if len(a) != len(c) {
		return len(a) < len(c)
	}
	return bytes.Compare(a, c) < 0
}

// readString reads the string at the start of src (its opening quote
// included) and returns it unescaped and what follows it. Without escapes
// it is a slice of src.
func readString(src []byte) ([]byte, []byte, error) {
	if len(src) == 0 || src[0] != '"' {
		return nil, nil, errors.New("jsonb text: expected a string")
	}
	escaped := false
	for i := 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			if !escaped {
				return src[1:i], src[i+1:], nil
			}
			var s string
			err := json.Unmarshal(src[:i+1], &s)
			return []byte(s), src[i+1:], err
		}
	}
	return nil, nil, errors.New("jsonb text: unterminated string")
}

// skipValue returns the length of the value at the start of compact JSON.
func skipValue(src []byte) (int, error) {
	depth, inString := 0, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return i + 1, nil
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i, nil
			}
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case c == ',' && depth == 0:
			return i, nil
		}
	}
	if depth == 0 && !inString {
		return len(src), nil
	}
	return 0, errors.New("jsonb text: unterminated value")
}

// writeJSONBString escapes as PostgreSQL's escape_json does: '"', '\\'
// and the control characters; everything else as it is.
func writeJSONBString(b *strings.Builder, s []byte) {
	b.WriteByte('"')
	start := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.Write(s[start:i])
		start = i + 1
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			fmt.Fprintf(b, `\u%04x`, c)
		}
	}
	b.Write(s[start:])
	b.WriteByte('"')
}
