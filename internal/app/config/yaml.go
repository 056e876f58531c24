package config

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/schema"
)

// fromYAML converts a YAML node tree into a schema tree. Aliases are
// followed; tags resolve as YAML resolves them. An alias copies the tree it
// names, so a few bytes of aliases to aliases can stand for billions of
// values: the copy stops with an error past aliasBudget of the tree's own
// nodes.
func fromYAML(n *yaml.Node) (*schema.Node, error) {
	budget := aliasBudget(countNodes(n))
	c := yamlConverter{budget: budget, max: budget}
	out := c.convert(n, 0)
	if c.budget < 0 {
		return nil, fmt.Errorf("config: YAML aliases expand to more than %d values (at most %d times the values written out, or %d); write the values out", c.max, maxAliasRatio, minAliasBudget)
	}
	return out, nil
}

// maxDepth bounds the nesting followed through aliases (an alias may refer
// to a node that holds it).
const maxDepth = 64

// maxAliasRatio and minAliasBudget bound what aliases may expand to:
// maxAliasRatio times the nodes written out, and never less than
// minAliasBudget (a few anchored defaults shared by many job types fit).
const (
	maxAliasRatio  = 10
	minAliasBudget = 10000
)

func aliasBudget(nodes int) int { return max(minAliasBudget, maxAliasRatio*nodes) }

// countNodes counts the nodes of n as written, without following aliases.
func countNodes(n *yaml.Node) int {
	count := 1
	for _, c := range n.Content {
		count += countNodes(c)
	}
	return count
}

// yamlConverter converts a tree, counting down budget (of max) by each
// node made.
type yamlConverter struct {
	budget, max int
}

func (c *yamlConverter) convert(n *yaml.Node, depth int) *schema.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	out := &schema.Node{Line: n.Line}
	c.budget--
	if depth > maxDepth || c.budget < 0 {
		// null: nothing sluice reads is nested this deep; past the
		// budget, fromYAML fails.
		return out
	}
	switch n.Kind {
	case yaml.MappingNode:
		out.Kind = schema.Map
		for i := 0; i+1 < len(n.Content); i += 2 {
			out.Keys = append(out.Keys, c.convert(n.Content[i], depth+1))
			out.Values = append(out.Values, c.convert(n.Content[i+1], depth+1))
		}
	case yaml.SequenceNode:
		out.Kind = schema.List
		for _, e := range n.Content {
			out.Values = append(out.Values, c.convert(e, depth+1))
		}
	case yaml.ScalarNode:
		out.Kind, out.Value = schema.Scalar, n.Value
		switch n.ShortTag() {
		case "!!null":
			out.Kind = schema.Null
		case "!!int":
			out.Type = schema.Int
		case "!!float":
			out.Type = schema.Float
		case "!!bool":
			out.Type = schema.Bool
		}
	default:
		out.Kind = schema.Null
	}
	return out
}

// expand expands ${VAR} and ${VAR:-default} in every scalar value under n
// (keys are left alone) and records the values taken from the environment
// as secrets. An expanded plain value resolves as if it were written out (a
// number, a bool); a quoted one stays a string.
func expand(n *yaml.Node, lookup func(string) (string, bool), path string, secrets *[]string) error {
	var errs []error
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, expand(n.Content[i+1], lookup, field.Join(path, n.Content[i].Value), secrets))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			errs = append(errs, expand(c, lookup, fmt.Sprintf("%s[%d]", path, i), secrets))
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return nil
		}
		v, used, err := expandEnv(n.Value, lookup)
		if err != nil {
			n.Tag, n.Value = "!!null", "" // keep the default: one problem, not two
			return field.Invalid(path, "%v", err)
		}
		*secrets = append(*secrets, used...)
		if v != n.Value {
			n.Value = v
			if n.Style == 0 {
				n.Tag = "" // let the expanded value resolve as if written out
			}
		}
	}
	return errors.Join(errs...)
}

// expandEnv expands ${VAR} and ${VAR:-default}; $${ is a literal ${. A
// variable that is not set and has no default is an error naming it.
func expandEnv(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var used []string
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", nil, errors.New(`unclosed "${" in value`)
			}
			expr := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validEnvName(name) {
				return "", nil, fmt.Errorf("invalid environment variable name %q", name)
			}
			v, ok := lookup(name)
			if !ok || (hasDef && v == "") {
				if !hasDef {
					return "", nil, fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
				}
				v = def
			} else {
				used = append(used, v)
			}
			b.WriteString(v)
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), used, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
