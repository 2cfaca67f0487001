package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// member is one key of a JSON object with its undecoded value.
type member struct {
	key string
	raw json.RawMessage
}

// maxShown bounds how much of a user's text is echoed back in an error.
const maxShown = 80

// decodeObject splits raw, which must hold exactly one JSON object, into its members in input order.
// Duplicate keys are reported (field.Duplicate on the key's path) and only their first occurrence is
// kept; data after the object is reported but does not discard the members. A syntax error or a
// value that is not an object returns nil members.
func decodeObject(raw string, fld *field.Path, example string) ([]member, field.ErrorList) {
	dec := json.NewDecoder(strings.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, field.ErrorList{syntaxError(fld, raw, dec, err, example)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, field.ErrorList{field.Invalid(fld, shorten(raw), fmt.Sprintf(
			"must be a JSON object (or empty to disable), not %s; write it as {\"key\":value,...}", tokenKind(tok)))}
	}
	var errs field.ErrorList
	members := []member{}
	seen := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, append(errs, syntaxError(fld, raw, dec, err, example))
		}
		key, _ := tok.(string) // the decoder only hands out string tokens in key position
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, append(errs, syntaxError(fld, raw, dec, err, example))
		}
		if n, dup := seen[key]; dup {
			seen[key] = n + 1
			e := field.Duplicate(fld.Child(shorten(key)), shorten(string(v)))
			e.Detail = fmt.Sprintf("key %q appears %s time in the object; keep a single %q", shorten(key), ordinal(n+1), shorten(key))
			errs = append(errs, e)
			continue
		}
		seen[key] = 1
		members = append(members, member{key: key, raw: v})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, append(errs, syntaxError(fld, raw, dec, err, example))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := dec.InputOffset()
		errs = append(errs, field.Invalid(fld, shorten(raw), fmt.Sprintf(
			"unexpected data after the JSON object (near byte %d: %q); the value must hold exactly one object, remove the rest",
			off, shorten(strings.TrimSpace(raw[min(int(off), len(raw)):])))))
	}
	return members, errs
}

func syntaxError(fld *field.Path, raw string, dec *json.Decoder, err error, example string) *field.Error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return field.Invalid(fld, shorten(raw), fmt.Sprintf(
			"is not valid JSON: %s at byte %d; the value must be a JSON object such as %s",
			strings.TrimPrefix(se.Error(), "json: "), se.Offset, example))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return field.Invalid(fld, shorten(raw), fmt.Sprintf(
			"is not valid JSON: it ends early (byte %d); close every open brace, bracket and string", dec.InputOffset()))
	default:
		return field.Invalid(fld, shorten(raw), fmt.Sprintf("is not valid JSON: %v", err))
	}
}

// tokenKind names the JSON type of a first token.
func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "a stray " + strconv.Quote(t.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// rawKind names the JSON type of an already validated raw value.
func rawKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// decodeString decodes a JSON string member; null reads as "".
func decodeString(raw json.RawMessage, fld *field.Path, example string) (string, *field.Error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON string, not %s; write it in double quotes, e.g. %s", rawKind(raw), example))
	}
	return s, nil
}

// decodeInt decodes a JSON integer member; null reads as 0.
func decodeInt(raw json.RawMessage, fld *field.Path, example string) (int, *field.Error) {
	if isNull(raw) {
		return 0, nil
	}
	text := string(raw)
	if rawKind(raw) != "a number" {
		detail := fmt.Sprintf("must be a JSON integer, not %s; write it as a bare number, e.g. %s", rawKind(raw), example)
		var s string
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
			if _, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				detail = fmt.Sprintf("must be a JSON integer, not a string; drop the quotes: %s", strings.TrimSpace(s))
			}
		}
		return 0, field.TypeInvalid(fld, shorten(text), detail)
	}
	v, err := strconv.ParseInt(text, 10, strconv.IntSize)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, field.Invalid(fld, shorten(text), "is out of range; "+example+" is the kind of value expected")
		}
		return 0, field.TypeInvalid(fld, shorten(text), "must be a whole number without fraction or exponent, e.g. "+example)
	}
	return int(v), nil
}

// decodeStringList decodes a JSON array of strings; null reads as nil. An element of the wrong type
// is reported at its index and kept as its JSON text, so later indices stay aligned with the input.
func decodeStringList(raw json.RawMessage, fld *field.Path, example string) ([]string, field.ErrorList) {
	if isNull(raw) {
		return nil, nil
	}
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON array of strings, not %s; e.g. [%s]", rawKind(raw), example))}
	}
	var errs field.ErrorList
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := decodeString(e, fld.Index(i), example)
		if err == nil && isNull(e) {
			err = field.TypeInvalid(fld.Index(i), nil, "must be a string, not null; remove the entry or write e.g. "+example)
		}
		if err != nil {
			errs = append(errs, err)
			s = string(e)
		}
		out = append(out, s)
	}
	return out, errs
}

// shorten truncates s for echoing in an error message.
func shorten(s string) string { return shortenTo(s, maxShown) }

// shortenTo truncates s to at most limit bytes, on a rune boundary, marking the cut with "…" and
// the length of the whole.
func shortenTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	suffix := fmt.Sprintf("…(%d bytes)", len(s))
	cut := max(limit-len(suffix), 0)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ordinal words the k-th occurrence of a key (k ≥ 2).
func ordinal(k int) string {
	switch k {
	case 2:
		return "a second"
	case 3:
		return "a third"
	}
	return fmt.Sprintf("a %dth", k)
}
