package model

import (
	"testing"
)

func TestCost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in, out string
		usage   Usage
		want    string
	}{
		{"free", "0", "0", Usage{InputTokens: 212, OutputTokens: 18}, "0.000000"},
		{"whole prices", "3", "15", Usage{InputTokens: 1204, OutputTokens: 42}, "0.004242"},                      // 3612 + 630 millionths
		{"providers.md example without cache", "3", "15", Usage{InputTokens: 180, OutputTokens: 42}, "0.001170"}, // 540 + 630
		{"decimal prices are exact", "0.3", "0.1", Usage{InputTokens: 1, OutputTokens: 2}, "0.000001"},           // 0.3 + 0.2 = 0.5 → half up
		{"below half rounds down", "0.4", "0", Usage{InputTokens: 1, OutputTokens: 0}, "0.000000"},
		{"exactly half rounds away from zero", "0.5", "0", Usage{InputTokens: 1, OutputTokens: 0}, "0.000001"},
		{"just under half", "0.4999999", "0", Usage{InputTokens: 1, OutputTokens: 0}, "0.000000"},
		{"a million tokens is the price", "2.5", "10", Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, "12.500000"},
		{"large", "15", "75", Usage{InputTokens: 3_000_000_000, OutputTokens: 1_000_000_000}, "120000.000000"},
		{"no tokens", "3", "15", Usage{}, "0.000000"},
		{"uncached input below zero counts as none", "0.5", "0", Usage{InputTokens: -1, OutputTokens: 0}, "0.000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Pricing{InputPerMTok: c.in, OutputPerMTok: c.out, Currency: "USD"}.Cost(c.usage)
			if err != nil {
				t.Fatal(err)
			}
			if got != (Cost{Amount: c.want, Currency: "USD"}) {
				t.Errorf("got %+v, want %s USD", got, c.want)
			}
		})
	}
}

func TestModelCost(t *testing.T) {
	t.Parallel()
	m, _ := MustBuiltin().Lookup("mock/scripted")
	c, err := m.Cost(Usage{InputTokens: 212, OutputTokens: 18})
	if err != nil || c == nil || *c != (Cost{"0.000000", "USD"}) {
		t.Errorf("built-in cost: %+v %v", c, err)
	}
	m.Pricing = nil
	if c, err := m.Cost(Usage{InputTokens: 1, OutputTokens: 1}); c != nil || err != nil {
		t.Errorf("a model without pricing got a cost: %+v %v", c, err)
	}
	m.Pricing = &Pricing{InputPerMTok: "x", OutputPerMTok: "0", Currency: "USD"}
	if _, err := m.Cost(Usage{InputTokens: 1, OutputTokens: 1}); err == nil {
		t.Error("a bad input price was used")
	}
	m.Pricing = &Pricing{InputPerMTok: "0", OutputPerMTok: "-2", Currency: "USD"}
	if _, err := m.Cost(Usage{InputTokens: 1, OutputTokens: 1}); err == nil {
		t.Error("a bad output price was used")
	}
}
