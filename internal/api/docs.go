package api

import (
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// docsPage renders the document for a person: every operation with its
// method and path, parameters, body and responses, and every schema with
// its fields. Self-contained (no script, no external asset).
func docsPage(doc *openapi3.T) http.Handler {
	type field struct{ Name, Type, Required, Description string }
	type schema struct {
		Name, Description string
		Fields            []field
	}
	type op struct {
		Method, Path, ID, Summary, Description, Body string
		Params                                       []field
		Responses                                    []string
	}
	var ops []op
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, o := range item.Operations() {
			v := op{Method: method, Path: path, ID: o.OperationID, Summary: o.Summary, Description: o.Description}
			for _, p := range o.Parameters {
				if p.Value != nil {
					v.Params = append(v.Params, field{Name: p.Value.Name + " (" + p.Value.In + ")", Type: typeOf(p.Value.Schema),
						Required: yes(p.Value.Required), Description: p.Value.Description})
				}
			}
			if o.RequestBody != nil && o.RequestBody.Value != nil {
				for ct, mt := range o.RequestBody.Value.Content {
					v.Body = ct + ": " + typeOf(mt.Schema)
				}
			}
			for code, resp := range o.Responses.Map() {
				v.Responses = append(v.Responses, code+" "+strings.TrimSpace(ptr(resp.Value.Description)))
			}
			slices.Sort(v.Responses)
			ops = append(ops, v)
		}
	}
	slices.SortFunc(ops, func(a, b op) int { return strings.Compare(a.Path+a.Method, b.Path+b.Method) })
	var schemas []schema
	for name, ref := range doc.Components.Schemas {
		s := schema{Name: name, Description: ref.Value.Description}
		for fname, f := range ref.Value.Properties {
			s.Fields = append(s.Fields, field{Name: fname, Type: typeOf(f), Required: yes(slices.Contains(ref.Value.Required, fname)), Description: f.Value.Description})
		}
		slices.SortFunc(s.Fields, func(a, b field) int { return strings.Compare(a.Name, b.Name) })
		schemas = append(schemas, s)
	}
	slices.SortFunc(schemas, func(a, b schema) int { return strings.Compare(a.Name, b.Name) })
	page := template.Must(template.New("docs").Parse(docsTemplate))
	data := map[string]any{"Title": doc.Info.Title, "Version": doc.Info.Version, "Description": doc.Info.Description, "Ops": ops, "Schemas": schemas}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = page.Execute(w, data) // a lost page is reloaded
	})
}

func typeOf(s *openapi3.SchemaRef) string {
	switch {
	case s == nil:
		return ""
	case s.Ref != "":
		return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
	case s.Value == nil || s.Value.Type == nil:
		return ""
	case s.Value.Type.Is("array"):
		return "array of " + typeOf(s.Value.Items)
	}
	t := strings.Join(s.Value.Type.Slice(), "|")
	if s.Value.Format != "" {
		t += " (" + s.Value.Format + ")"
	}
	if len(s.Value.Enum) > 0 {
		var vals []string
		for _, e := range s.Value.Enum {
			if str, ok := e.(string); ok {
				vals = append(vals, str)
			}
		}
		t += ": " + strings.Join(vals, " | ")
	}
	return t
}

func yes(b bool) string {
	if b {
		return "required"
	}
	return ""
}

func ptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

const docsTemplate = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
code,td{font-family:ui-monospace,monospace;font-size:13px}table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}h2{margin-top:2.5rem}
.m{font-weight:bold}</style></head><body>
<h1>{{.Title}} <small>{{.Version}}</small></h1>
<pre>{{.Description}}</pre>
<p>The machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<h2>Operations</h2>
{{range .Ops}}<h3 id="{{.ID}}"><span class="m">{{.Method}}</span> <code>{{.Path}}</code> — {{.ID}}</h3>
<p>{{.Summary}}</p>{{if .Description}}<pre>{{.Description}}</pre>{{end}}
{{if .Params}}<table><tr><th>parameter</th><th>type</th><th></th><th></th></tr>{{range .Params}}<tr><td>{{.Name}}</td><td>{{.Type}}</td><td>{{.Required}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{if .Body}}<p>Body: <code>{{.Body}}</code></p>{{end}}
<p>Responses:</p><ul>{{range .Responses}}<li>{{.}}</li>{{end}}</ul>
{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<h3 id="{{.Name}}">{{.Name}}</h3>{{if .Description}}<p>{{.Description}}</p>{{end}}
<table><tr><th>field</th><th>type</th><th></th><th></th></tr>{{range .Fields}}<tr><td>{{.Name}}</td><td>{{.Type}}</td><td>{{.Required}}</td><td>{{.Description}}</td></tr>{{end}}</table>
{{end}}</body></html>
`
