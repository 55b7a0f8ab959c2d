package store

import (
	"strings"
	"testing"
)

// A plan's statement is remembered by shape: plans that differ in a guard's condition, in their
// number of rows or in notifying get statements of their own, a plan of a shape met before gets
// the same text again, and a remembered text is used only for the very conditions it was built
// from.
func TestPlanStatementByShape(t *testing.T) {
	plan := func(tasks int, notify bool, conds ...string) *plan {
		p := &plan{tasks: make([]Task, tasks)}
		for _, c := range conds {
			p.guards = append(p.guards, planGuard{cond: c})
		}
		if notify {
			p.channels, p.payloads = []string{"c"}, []string{"p"}
		}
		return p
	}
	a, b := plan(1, false, "1 = 1"), plan(1, false, "2 = 2")
	ta, tb := a.statement(), b.statement()
	if !strings.Contains(ta, "(1 = 1)") || strings.Contains(ta, "2 = 2") || !strings.Contains(tb, "(2 = 2)") {
		t.Fatalf("statements for two guards:\n%s\n%s", ta, tb)
	}
	if again := plan(1, false, "1 = 1").statement(); again != ta {
		t.Fatalf("the same shape got another text:\n%s\n%s", again, ta)
	}
	if two := plan(2, false, "1 = 1").statement(); !strings.Contains(two, "t1 AS (INSERT") || two == ta {
		t.Fatalf("two rows:\n%s", two)
	}
	if n := plan(1, true, "1 = 1").statement(); !strings.Contains(n, "pg_notify") || strings.Contains(ta, "pg_notify") {
		t.Fatalf("a notifying plan:\n%s", n)
	}
	if strings.Contains(ta, "?") {
		t.Fatalf("the statement keeps ? placeholders:\n%s", ta)
	}
	if (planText{conds: []string{"1 = 1"}}).sameGuards(b.guards) {
		t.Fatal("a text built for one condition serves another")
	}
}
