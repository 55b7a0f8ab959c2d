package model

import (
	"fmt"
	"math/big"
)

// costPlaces is how many decimal places a cost amount has (docs/api.md#runs).
const costPlaces = 6

// tokensPerMTok is the unit prices are quoted in: per million tokens.
const tokensPerMTok = 1_000_000

// Cost is a model task's usage.cost.
type Cost struct {
	Amount   string `json:"amount"` // a decimal string with 6 places: "0.001477"
	Currency string `json:"currency"`
}

// Cost prices a usage (docs/providers.md, usage and cost):
//
//	uncached = input - cached - cache_write   (0 if negative)
//	amount   = (uncached × input_per_mtok + cached × cached_input_per_mtok
//	            + cache_write × cache_write_per_mtok + output × output_per_mtok) ÷ 1,000,000
//
// computed exactly on the configured decimals and rounded half away from zero to 6 places. The
// cache prices default to input_per_mtok.
func (p Pricing) Cost(u Usage) (Cost, error) {
	in, err := parsePrice(p.InputPerMTok)
	if err != nil {
		return Cost{}, fmt.Errorf("model: input_per_mtok %w", err)
	}
	out, err := parsePrice(p.OutputPerMTok)
	if err != nil {
		return Cost{}, fmt.Errorf("model: output_per_mtok %w", err)
	}
	cached, write := in, in
	if p.CachedInputPerMTok != "" {
		if cached, err = parsePrice(p.CachedInputPerMTok); err != nil {
			return Cost{}, fmt.Errorf("model: cached_input_per_mtok %w", err)
		}
	}
	if p.CacheWritePerMTok != "" {
		if write, err = parsePrice(p.CacheWritePerMTok); err != nil {
			return Cost{}, fmt.Errorf("model: cache_write_per_mtok %w", err)
		}
	}
	uncached := max(u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens, 0)
	total := new(big.Rat).Mul(in, new(big.Rat).SetInt64(uncached))
	total.Add(total, new(big.Rat).Mul(cached, new(big.Rat).SetInt64(u.CachedInputTokens)))
	total.Add(total, new(big.Rat).Mul(write, new(big.Rat).SetInt64(u.CacheWriteInputTokens)))
	total.Add(total, new(big.Rat).Mul(out, new(big.Rat).SetInt64(u.OutputTokens)))
	// Six places of (total ÷ 10^6) are total itself in millionths, so the amount in millionths is
	// total rounded to an integer.
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(costPlaces), nil)
	total.Mul(total, new(big.Rat).SetFrac(scale, big.NewInt(tokensPerMTok)))
	return Cost{Amount: formatMillionths(roundHalfAway(total), scale), Currency: p.Currency}, nil
}

// Cost prices a usage with the model's pricing; nil when the model has none.
func (m Model) Cost(u Usage) (*Cost, error) {
	if m.Pricing == nil {
		return nil, nil
	}
	c, err := m.Pricing.Cost(u)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func roundHalfAway(r *big.Rat) *big.Int {
	num := new(big.Int).Abs(r.Num())
	den := r.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Lsh(rem, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

func formatMillionths(n, scale *big.Int) string {
	sign := ""
	if n.Sign() < 0 {
		sign = "-"
		n = new(big.Int).Neg(n)
	}
	whole, frac := new(big.Int).QuoRem(n, scale, new(big.Int))
	return fmt.Sprintf("%s%s.%0*d", sign, whole.String(), costPlaces, frac.Int64()) // frac < scale fits
}
