package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// examples are the published example IBANs of the IBAN registry (and
// Wikipedia's for GB82WEST...), one or more per country of the registry.
var examples = []string{
	"AD1200012030200359100100",
	"AE070331234567890123456",
	"AL47212110090000000235698741",
	"AT611904300234573201",
	"AZ21NABZ00000000137010001944",
	"BA391290079401028494",
	"BE68539007547034",
	"BG80BNBG96611020345678",
	"BH67BMAG00001299123456",
	"BI4210000100010000332045181",
	"BR9700360305000010009795493P1",
	"BY13NBRB3600900000002Z00AB00",
	"CH9300762011623852957",
	"CR05015202001026284066",
	"CY17002001280000001200527600",
	"CZ6508000000192000145399",
	"DE89370400440532013000",
	"DJ2100010000000154000100186",
	"DK5000400440116243",
	"DO28BAGR00000001212453611324",
	"EE382200221020145685",
	"EG380019000500000000263180002",
	"ES9121000418450200051332",
	"FI2112345600000785",
	"FK88SC123456789012",
	"FO6264600001631634",
	"FR1420041010050500013M02606",
	"GB29NWBK60161331926819",
	"GB82WEST12345698765432",
	"GE29NB0000000101904917",
	"GI75NWBK000000007099453",
	"GL8964710001000206",
	"GR1601101250000000012300695",
	"GT82TRAJ01020000001210029690",
	"HN88CABF00000000000250005469",
	"HR1210010051863000160",
	"HU42117730161111101800000000",
	"IE29AIBK93115212345678",
	"IL620108000000099999999",
	"IQ98NBIQ850123456789012",
	"IS140159260076545510730339",
	"IT60X0542811101000000123456",
	"JO94CBJO0010000000000131000302",
	"KW81CBKU0000000000001234560101",
	"KZ86125KZT5004100100",
	"LB62099900000001001901229114",
	"LC55HEMM000100010012001200023015",
	"LI21088100002324013AA",
	"LT121000011101001000",
	"LU280019400644750000",
	"LV80BANK0000435195001",
	"LY83002048000020100120361",
	"MC5811222000010123456789030",
	"MD24AG000225100013104168",
	"ME25505000012345678951",
	"MK07250120000058984",
	"MN121234123456789123",
	"MR1300020001010000123456753",
	"MT84MALT011000012345MTLCAST001S",
	"MU17BOMM0101101030300200000MUR",
	"NI45BAPR00000013000003558124",
	"NL91ABNA0417164300",
	"NO9386011117947",
	"OM810180000001299123456",
	"PK36SCBL0000001123456702",
	"PL61109010140000071219812874",
	"PS92PALS000000000400123456702",
	"PT50000201231234567890154",
	"QA58DOHB00001234567890ABCDEFG",
	"RO49AAAA1B31007593840000",
	"RS35260005601001611379",
	"RU0304452522540817810538091310419",
	"SA0380000000608010167519",
	"SC18SSCB11010000000000001497USD",
	"SD2129010501234001",
	"SE4550000000058398257466",
	"SI56263300012039086",
	"SK3112000000198742637541",
	"SM86U0322509800000000270100",
	"SO211000001001000100141",
	"ST68000100010051845310112",
	"SV62CENR00000000000000700025",
	"TL380080012345678910157",
	"TN5910006035183598478831",
	"TR330006100519786457841326",
	"UA213223130000026007233566001",
	"VA59001123000012345678",
	"VG96VPVG0000012345678901",
	"XK051212012345678906",
	"YE15CBYE0001018861234567891234",
}

func TestCheckValid(t *testing.T) {
	for _, iban := range examples {
		t.Run(iban, func(t *testing.T) {
			grouped := group(iban)
			forms := []string{
				iban,
				grouped,
				strings.ToLower(grouped),
				strings.ReplaceAll(grouped, " ", "-"),
				strings.ReplaceAll(grouped, " ", "."),
				strings.ReplaceAll(grouped, " ", "/"),
				"  " + strings.ReplaceAll(grouped, " ", "\t") + " ",
			}
			for _, in := range forms {
				want := Verdict{
					Input: in, Valid: true, IBAN: iban, Grouped: grouped,
					Country: iban[:2], CountryName: registry[iban[:2]].name,
				}
				if diff := cmp.Diff(want, Check(in)); diff != "" {
					t.Errorf("Check(%q) mismatch (-want +got):\n%s", in, diff)
				}
			}
		})
	}
}

// TestRegistryHasExamples checks the registry against the examples: every
// country has one, of its length.
func TestRegistryHasExamples(t *testing.T) {
	seen := map[string]bool{}
	for _, iban := range examples {
		c, ok := registry[iban[:2]]
		if !ok {
			t.Errorf("example %s: country %s is not in the registry", iban, iban[:2])
			continue
		}
		if len(iban) != c.length {
			t.Errorf("example %s has %d characters; the registry says %s IBANs have %d", iban, len(iban), iban[:2], c.length)
		}
		seen[iban[:2]] = true
	}
	for cc := range registry {
		if !seen[cc] {
			t.Errorf("registry country %s has no example IBAN", cc)
		}
	}
	if len(registry) != 89 {
		t.Errorf("registry has %d countries, want the 89 of release 102", len(registry))
	}
}

func TestCheckInvalid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Verdict
	}{
		{
			name:  "unknown country",
			input: "XX89 3704 0044 0532 0130 00",
			want: Verdict{Error: errCountry, IBAN: "XX89370400440532013000", Grouped: "XX89 3704 0044 0532 0130 00",
				Reason: `unknown country "XX": it has no IBANs in the registry`},
		},
		{
			name:  "one character short",
			input: "DE89 3704 0044 0532 0130 0",
			want: Verdict{Error: errLength, IBAN: "DE8937040044053201300", Grouped: "DE89 3704 0044 0532 0130 0",
				Country: "DE", CountryName: "Germany", Reason: "length 21 but DE needs 22"},
		},
		{
			name:  "one character long",
			input: "NO93 8601 1117 9470",
			want: Verdict{Error: errLength, IBAN: "NO93860111179470", Grouped: "NO93 8601 1117 9470",
				Country: "NO", CountryName: "Norway", Reason: "length 16 but NO needs 15"},
		},
		{
			name:  "last digit wrong",
			input: "GB82 WEST 1234 5698 7654 33",
			want: Verdict{Error: errChecksum, IBAN: "GB82WEST12345698765433", Grouped: "GB82 WEST 1234 5698 7654 33",
				Country: "GB", CountryName: "United Kingdom",
				Reason: "checksum fails (remainder 28, must be 1): a character is wrong or two are swapped"},
		},
		{
			name:  "swapped check digits",
			input: "DE98370400440532013000",
			want: Verdict{Error: errChecksum, IBAN: "DE98370400440532013000", Grouped: "DE98 3704 0044 0532 0130 00",
				Country: "DE", CountryName: "Germany",
				Reason: "checksum fails (remainder 10, must be 1): a character is wrong or two are swapped"},
		},
		{
			// DE98 3704 0044 0532 0130 32 is valid; 01 = 98 - 97 passes the
			// checksum but is not a valid pair of check digits.
			name:  "check digits 01 pass the checksum but are out of range",
			input: "DE01370400440532013032",
			want: Verdict{Error: errCheckDigits, IBAN: "DE01370400440532013032", Grouped: "DE01 3704 0044 0532 0130 32",
				Country: "DE", CountryName: "Germany", Reason: "check digits 01 are out of range: they are 02 to 98"},
		},
		{
			name:  "check digits 00",
			input: "DE00370400440532013050",
			want: Verdict{Error: errCheckDigits, IBAN: "DE00370400440532013050", Grouped: "DE00 3704 0044 0532 0130 50",
				Country: "DE", CountryName: "Germany", Reason: "check digits 00 are out of range: they are 02 to 98"},
		},
		{
			name:  "check digits 99",
			input: "DE99370400440532013014",
			want: Verdict{Error: errCheckDigits, IBAN: "DE99370400440532013014", Grouped: "DE99 3704 0044 0532 0130 14",
				Country: "DE", CountryName: "Germany", Reason: "check digits 99 are out of range: they are 02 to 98"},
		},
		{
			name:  "invalid character",
			input: "DE89 3704 0044 0532 0130 0#",
			want: Verdict{Error: errCharacters,
				Reason: `invalid character '#' at position 22 (an IBAN has only letters A-Z and digits; positions do not count separators)`},
		},
		{
			name:  "several invalid characters, one not ASCII",
			input: "DE89 37Ä4 0044 0532_0130 00",
			want: Verdict{Error: errCharacters,
				Reason: `invalid characters: 'Ä' at position 7, '_' at position 17 (an IBAN has only letters A-Z and digits; positions do not count separators)`},
		},
		{
			name:  "letters where check digits go",
			input: "DEAB370400440532013000",
			want: Verdict{Error: errFormat, IBAN: "DEAB370400440532013000", Grouped: "DEAB 3704 0044 0532 0130 00",
				Country: "DE", CountryName: "Germany", Reason: `check digits "AB" are not two digits`},
		},
		{
			name:  "no country code",
			input: "1234 5678 9012",
			want: Verdict{Error: errFormat, IBAN: "123456789012", Grouped: "1234 5678 9012",
				Reason: `does not start with a two-letter country code (starts with "12")`},
		},
		{
			name:  "too short",
			input: "DE8",
			want:  Verdict{Error: errFormat, IBAN: "DE8", Grouped: "DE8", Reason: "too short to be an IBAN (3 characters)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Input = tt.input
			if diff := cmp.Diff(tt.want, Check(tt.input)); diff != "" {
				t.Errorf("Check(%q) mismatch (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{
			name: "groups separated by spaces, IBANs by a comma",
			text: "DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32",
			want: []string{"DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32"},
		},
		{
			name: "two grouped IBANs separated by a space only",
			text: "DE89 3704 0044 0532 0130 00 GB82 WEST 1234 5698 7654 32",
			want: []string{"DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32"},
		},
		{
			name: "compact IBANs separated by spaces",
			text: "de89370400440532013000 NL91ABNA0417164300  NO9386011117947",
			want: []string{"de89370400440532013000", "NL91ABNA0417164300", "NO9386011117947"},
		},
		{
			name: "semicolons, new lines and the word IBAN",
			text: "IBAN: DE89 3704 0044 0532 0130 00;\r\nIBAN BE68 5390 0754 7034\n\n; ,",
			want: []string{"DE89 3704 0044 0532 0130 00", "BE68 5390 0754 7034"},
		},
		{
			name: "dashes, dots and slashes within an IBAN",
			text: "CH93-0076-2011-6238-5295-7, AT61.1904.3002.3457.3201 / ",
			want: []string{"CH93-0076-2011-6238-5295-7", "AT61.1904.3002.3457.3201"},
		},
		{
			name: "a short IBAN ends where the next one starts",
			text: "DE89 3704 0044 0532 0130 0 GB82 WEST 1234 5698 7654 32",
			want: []string{"DE89 3704 0044 0532 0130 0", "GB82 WEST 1234 5698 7654 32"},
		},
		{
			name: "one IBAN whose group looks like an unknown start stays whole",
			text: "BY13 NBRB 3600 9000 0000 2Z00 AB00",
			want: []string{"BY13 NBRB 3600 9000 0000 2Z00 AB00"},
		},
		{
			name: "one long IBAN with a single start stays whole",
			text: "DE89 3704 0044 0532 0130 00 00",
			want: []string{"DE89 3704 0044 0532 0130 00 00"},
		},
		{
			name: "junk before an IBAN on the same line is its own candidate",
			text: "account 1234 DE89 3704 0044 0532 0130 00 NL91 ABNA 0417 1643 00",
			want: []string{"account 1234", "DE89 3704 0044 0532 0130 00", "NL91 ABNA 0417 1643 00"},
		},
		{
			name: "nothing",
			text: " , ;\n ",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Split(tt.text)); diff != "" {
				t.Errorf("Split(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestCheckTool(t *testing.T) {
	res, out, err := checkTool(context.Background(), Input{IBANs: "DE89 3704 0044 0532 0130 00, gb82 west 1234 5698 7654 33\nXX00"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Valid != 1 || out.Invalid != 2 || len(out.Results) != 3 {
		t.Errorf("checkTool counts: valid %d, invalid %d, results %d; want 1, 2, 3", out.Valid, out.Invalid, len(out.Results))
	}
	want := `3 IBANs checked: 1 valid, 2 invalid.
DE89 3704 0044 0532 0130 00: valid (DE, Germany)
GB82 WEST 1234 5698 7654 33: invalid: checksum fails (remainder 28, must be 1): a character is wrong or two are swapped
XX00: invalid: too short to be an IBAN (4 characters)`
	if len(res.Content) != 1 {
		t.Fatalf("checkTool content = %d blocks, want 1", len(res.Content))
	}
	if diff := cmp.Diff(want, res.Content[0].(*mcp.TextContent).Text); diff != "" {
		t.Errorf("checkTool text (-want +got):\n%s", diff)
	}

	if _, _, err := checkTool(context.Background(), Input{IBANs: " ,; "}); err == nil || !strings.Contains(err.Error(), "no IBAN found") {
		t.Errorf("checkTool of nothing: err = %v, want \"no IBAN found\"", err)
	}
	if _, _, err := checkTool(context.Background(), Input{IBANs: strings.Repeat("A", maxInput+1)}); err == nil {
		t.Error("checkTool of an oversized input: no error")
	}
}

func FuzzSplitCheck(f *testing.F) {
	for _, s := range []string{
		"DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32",
		"IBAN: de89-3704-0044-0532-0130-00\nNO9386011117947 BE68539007547034",
		"DE89 3704 0044 0532 0130 0 GB82 WEST 1234 5698 7654 32",
		"ß€ 12 ab34 , ; //",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range Split(text) {
			if c == "" || !strings.Contains(text, c) {
				t.Fatalf("Split(%q) returned %q, not a non-empty part of the input", text, c)
			}
			v := Check(c)
			if v.Valid {
				if len(v.IBAN) != registry[v.Country].length || mod97(v.IBAN) != 1 {
					t.Fatalf("Check(%q) = valid %+v, but length or checksum is wrong", c, v)
				}
			} else if v.Reason == "" || v.Error == "" {
				t.Fatalf("Check(%q) = invalid without a reason: %+v", c, v)
			}
		}
	})
}
