package store

import (
	"strings"
	"testing"
)

// A statement of plans is remembered by the plans' shapes: plans that differ in a guard's
// condition, in their number of rows or in notifying get statements of their own, plans of
// shapes met before get the same text again, a statement of two plans holds two chains, and a
// remembered text is used only for the very shapes it was built from.
func TestPlanStatementByShape(t *testing.T) {
	mk := func(tasks int, notify bool, conds ...string) *plan {
		p := &plan{tasks: make([]Task, tasks)}
		for _, c := range conds {
			p.guards = append(p.guards, planGuard{cond: c})
		}
		if notify {
			p.channels, p.payloads = []string{"c"}, []string{"p"}
		}
		return p
	}
	text := func(ps ...*plan) string { return planStatement(ps) }
	a, b := mk(1, false, "1 = 1"), mk(1, false, "2 = 2")
	ta, tb := text(a), text(b)
	if !strings.Contains(ta, "(1 = 1)") || strings.Contains(ta, "2 = 2") || !strings.Contains(tb, "(2 = 2)") {
		t.Fatalf("statements for two guards:\n%s\n%s", ta, tb)
	}
	if again := text(mk(1, false, "1 = 1")); again != ta {
		t.Fatalf("the same shape got another text:\n%s\n%s", again, ta)
	}
	if two := text(mk(2, false, "1 = 1")); !strings.Contains(two, "t0_1 AS (INSERT") || two == ta {
		t.Fatalf("two rows:\n%s", two)
	}
	if n := text(mk(1, true, "1 = 1")); !strings.Contains(n, "pg_notify") || strings.Contains(ta, "pg_notify") {
		t.Fatalf("a notifying plan:\n%s", n)
	}
	both := text(a, b)
	for _, want := range []string{"g0 AS (SELECT 1 AS ok WHERE (1 = 1))", "g1 AS (SELECT 1 AS ok WHERE (2 = 2))", "FROM g1 RETURNING id", "SELECT 1 AS plan, r1.id"} {
		if !strings.Contains(both, want) {
			t.Fatalf("a statement of two plans lacks %q:\n%s", want, both)
		}
	}
	if text(b, a) == both {
		t.Fatal("two plans in the other order got the same text")
	}
	if strings.Contains(ta, "?") || strings.Contains(both, "?") {
		t.Fatalf("the statement keeps ? placeholders:\n%s", ta)
	}
	if (planText{shapes: []planShape{shapeOf(a)}}).fits([]*plan{b}) {
		t.Fatal("a text built for one condition serves another")
	}
}
