package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// FromJSON reads one JSON value into a Node, keeping the order of keys. Every
// node is on line (the JSON text is one line of a larger file, or 0).
func FromJSON(raw []byte, line int) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := jsonNode(dec, line)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("must be a single JSON value")
	}
	return n, nil
}

func jsonNode(dec *json.Decoder, line int) (*Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &Node{Kind: Map, Line: line}
		if t == '[' {
			n.Kind = List
		}
		for dec.More() {
			if n.Kind == Map {
				k, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("bad JSON: %w", err)
				}
				n.Keys = append(n.Keys, &Node{Kind: Scalar, Value: k.(string), Line: line})
			}
			v, err := jsonNode(dec, line)
			if err != nil {
				return nil, err
			}
			n.Values = append(n.Values, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, fmt.Errorf("bad JSON: %w", err)
		}
		return n, nil
	case nil:
		return &Node{Kind: Null, Line: line}, nil
	case bool:
		return &Node{Kind: Scalar, Type: Bool, Value: fmt.Sprint(t), Line: line}, nil
	case json.Number:
		typ := Int
		if strings.ContainsAny(t.String(), ".eE") {
			typ = Float
		}
		return &Node{Kind: Scalar, Type: typ, Value: t.String(), Line: line}, nil
	case string:
		return &Node{Kind: Scalar, Type: String, Value: t, Line: line}, nil
	}
	return nil, fmt.Errorf("bad JSON: unexpected %v", tok)
}
