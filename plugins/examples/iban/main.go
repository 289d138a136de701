// Command iban is an example Manifold plugin: the tool iban_check validates
// IBANs offline (country, length, ISO 7064 MOD 97-10 checksum) and says
// precisely what is wrong with an invalid one.
//
// Build it and add it to proxy.toml:
//
//	go build -o bin/iban ./plugins/examples/iban
//
//	[plugins.iban]
//	path = "bin/iban"
package main

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins/sdk"
)

// maxInput bounds the text one call checks.
const maxInput = 64 << 10

// Input is the arguments of iban_check.
type Input struct {
	IBANs string `json:"ibans" jsonschema:"one or more IBANs, separated by commas, semicolons, new lines or spaces; spaces, dashes, dots and slashes within an IBAN and lower case are fine"`
}

// Output is the structured result of iban_check.
type Output struct {
	Results []Verdict `json:"results" jsonschema:"one verdict per IBAN, in input order"`
	Valid   int       `json:"valid" jsonschema:"how many IBANs are valid"`
	Invalid int       `json:"invalid" jsonschema:"how many IBANs are invalid"`
}

func main() {
	p := sdk.New()
	sdk.AddTool(p, &mcp.Tool{
		Name:  "iban_check",
		Title: "Check IBANs",
		Description: "Validate one or more IBANs (International Bank Account Numbers) offline: " +
			"the country must be in the IBAN registry, the length must be that country's, and the " +
			"MOD 97-10 checksum must hold. Returns, per IBAN, the verdict, the country, the electronic " +
			"and the grouped print form, and for an invalid IBAN the precise reason. It does not " +
			"check that the bank or the account exists.",
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  new(false),
		},
	}, checkTool)
	p.Serve()
}

// checkTool is iban_check.
func checkTool(_ context.Context, in Input) (*mcp.CallToolResult, Output, error) {
	if len(in.IBANs) > maxInput {
		return nil, Output{}, errors.New("the input is longer than 64 KiB; check fewer IBANs per call")
	}
	out := Output{Results: []Verdict{}}
	for _, c := range Split(in.IBANs) {
		v := Check(c)
		out.Results = append(out.Results, v)
		if v.Valid {
			out.Valid++
		} else {
			out.Invalid++
		}
	}
	if len(out.Results) == 0 {
		return nil, Output{}, errors.New("no IBAN found in the input; pass IBANs like \"DE89 3704 0044 0532 0130 00\"")
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Summary(out.Results)}}}
	return res, out, nil
}
